-- weir.keyed: the keyed operators, Flink's KeyedProcessOperator (keyed:process with state and
-- timers) and StreamGroupedReduceOperator (the rolling aggregates of weir.rolling). Owns, per
-- subtask, the keyed state (runtime/kstate.c: numbers in C, other values in inst.vals by the
-- entry's slot id), the timers (runtime/timers.c: (time, key id) per domain, a set as in Flink),
-- key interning, the state handles open() gets (rt:value_state and the others), the contexts
-- process and on_timer see, TTL (Flink's StateTtlConfig: on create and write, never return
-- expired, processing time, incremental cleanup), and the logical enumeration a snapshot reads
-- (M.entries, M.timers). It plugs into the job as a window operator does (weir.windowing's
-- operator interface: node.window_op), so the processing-timer registry, metrics and status
-- see it.
local ffi = require("ffi")
local C = require("weir.ffi")
local util = require("weir.util")
local duration = require("weir.duration")
local format = require("weir.format")
local wc = require("weir.wincontext")
local keys = require("weir.keys")

local M = {}

local EVENT, PROCESSING = tonumber(C.WEIR_TIME_EVENT), tonumber(C.WEIR_TIME_PROCESSING)
local NUMBER, LUA = tonumber(C.WEIR_KSTATE_NUMBER), tonumber(C.WEIR_KSTATE_LUA)
local CELLS = tonumber(C.WEIR_KSTATE_CELLS)
local INF = math.huge
local MAX_TIME = duration.MAX_TIME
local CLEANUP = 5 -- entries an incremental TTL scan looks at per TTL'd write (Flink's default)
local timer_t = ffi.typeof("weir_timer_t")
local timers_array_t = ffi.typeof("weir_timer_t[?]")
local dropped_t = ffi.typeof("int32_t[?]")
local pair_t = ffi.typeof("double[2]")
local row_ptr_t = ffi.typeof("double *[1]")
local EMPTY = setmetatable({}, { __newindex = function() error("read-only", 2) end })

-- State handles -------------------------------------------------------------------------------
-- A handle belongs to one subtask and works on the subtask's current row (inst.row[0]: the cells
-- of the current key's states, looked up once per record and per timer, or NULL). The pointer
-- lives in a one-element cdata array, not in a table field: a pointer stored in a table is a
-- boxed cdata, an allocation per record, while one written into an array is raw bytes. A
-- handle's fields: inst, sid (the state id, the same in every subtask), base (sid *
-- WEIR_KSTATE_CELLS: where its cells start in the row), ttl (ms, 0: none), job (for the
-- clock), name, kind, and fn / agg for reducing and aggregating state. The cells: [base] the
-- number, [base + 1] the expiry, [base + 2] the kind, [base + 3] the value slot (inst.vals[slot]
-- holds a value that is no number).

local function now_of(h)
  return h.job:now()
end

local function clear(h)
  local inst = h.inst
  local r = inst.row[0]
  if r == nil or r[h.base + 2] == 0 then
    return
  end
  local slot = r[h.base + 3]
  inst.vals[slot], inst.exps[slot] = nil, nil
  if C.weir_kstate_clear(inst.kstate, inst.kid, h.sid) == 1 then
    inst.row[0] = nil -- the key's last state: the row is gone
  end
end

-- The current row when the state holds a live value, else nil (an expired value is emptied
-- here: Flink's NeverReturnExpired).
local function live(h)
  local r = h.inst.row[0]
  if r == nil then
    return nil
  end
  local b = h.base
  if r[b + 2] == 0 then
    return nil
  end
  local e = r[b + 1]
  if e < INF and e <= now_of(h) then
    clear(h)
    return nil
  end
  return r
end

-- The current row, created when absent; with a TTL the state's expiry moves to now + ttl
-- (OnCreateAndWrite) and a few rows are checked for expired states (incremental cleanup).
local function writable(h)
  local inst = h.inst
  local r = inst.row[0]
  if r == nil then
    r = C.weir_kstate_row_put(inst.kstate, inst.kid)
    if r == nil then
      error(("%s '%s': keyed state is full (2^31 keys in this subtask)"):format(h.kind, h.name),
        3)
    end
    inst.row[0] = r
  end
  if h.ttl > 0 then
    local now = now_of(h)
    r[h.base + 1] = now + h.ttl
    local dropped = inst.dropped
    local n = C.weir_kstate_expire(inst.kstate, now, CLEANUP, dropped)
    for i = 0, n - 1 do
      local slot = dropped[i]
      inst.vals[slot], inst.exps[slot] = nil, nil
    end
  end
  return r
end

local function get_value(h)
  local r = live(h)
  if r == nil then
    return nil
  end
  local b = h.base
  if r[b + 2] == NUMBER then
    return r[b]
  end
  return h.inst.vals[r[b + 3]]
end

local function set_value(h, v)
  local r = writable(h)
  local b = h.base
  if type(v) == "number" then
    if r[b + 2] == LUA then
      h.inst.vals[r[b + 3]] = nil
    end
    r[b], r[b + 2] = v, NUMBER
  else
    h.inst.vals[r[b + 3]] = v
    r[b + 2] = LUA
  end
end

-- The Lua table of a list or map state, or nil.
local function get_table(h)
  local r = live(h)
  if r == nil then
    return nil
  end
  return h.inst.vals[r[h.base + 3]]
end

-- The Lua table of a list or map state, created when absent (and the TTL refreshed).
local function table_for_write(h)
  local r = writable(h)
  local b = h.base
  local vals = h.inst.vals
  local t = vals[r[b + 3]]
  if r[b + 2] ~= LUA or t == nil then
    t = {}
    vals[r[b + 3]] = t
    r[b + 2] = LUA
  end
  return t
end

local function no_nil(h, what, v)
  if v == nil then
    error(("%s '%s': %s cannot be nil (clear() empties the state)"):format(h.kind, h.name,
      what), 3)
  end
end

local ValueState = {}
ValueState.__index = ValueState
function ValueState:value() return get_value(self) end
function ValueState:update(v)
  if v == nil then
    return clear(self) -- Flink: update(null) clears the state
  end
  return set_value(self, v)
end
function ValueState:clear() return clear(self) end

-- List and map state with a TTL keep each element's expiry (Flink's TtlListState, TtlMapState)
-- in inst.exps[slot], beside the values: a list's expiries never decrease (each write is at the
-- clock's reading then), so its expired elements are always a prefix; the row's expiry is the
-- last write's, so the whole state expires when its last element does.

-- The expiries of the state's table (created when absent), for a write.
local function exps_for_write(h, r)
  local exps = h.inst.exps
  local slot = r[h.base + 3]
  local e = exps[slot]
  if e == nil then
    e = {}
    exps[slot] = e
  end
  return e
end

-- A list state's live elements: drops the expired prefix (and the state when none is left).
local function live_list(h)
  local t = get_table(h)
  if t == nil or h.ttl == 0 then
    return t
  end
  local e = h.inst.exps[h.inst.row[0][h.base + 3]]
  local now = now_of(h)
  local n, k = #t, 0
  while k < n and e[k + 1] <= now do
    k = k + 1
  end
  if k == n then
    clear(h)
    return nil
  end
  if k > 0 then
    for i = 1, n - k do
      t[i], e[i] = t[i + k], e[i + k]
    end
    for i = n - k + 1, n do
      t[i], e[i] = nil, nil
    end
  end
  return t
end

local function list_append(t, v, e, exp)
  local n = #t + 1
  t[n] = v
  if e then
    e[n] = exp
  end
end

local ListState = {}
ListState.__index = ListState
function ListState:get()
  return live_list(self) or {}
end
function ListState:add(v)
  no_nil(self, "add: the value", v)
  live_list(self)
  local t = table_for_write(self)
  local ttl = self.ttl
  if ttl > 0 then
    list_append(t, v, exps_for_write(self, self.inst.row[0]), now_of(self) + ttl)
  else
    t[#t + 1] = v
  end
end
function ListState:add_all(vs)
  if type(vs) ~= "table" then
    error(("list_state '%s': add_all: expected a sequence, got %s"):format(self.name,
      type(vs)), 2)
  end
  if #vs == 0 then
    return
  end
  live_list(self)
  local t = table_for_write(self)
  local e, exp = nil, nil
  if self.ttl > 0 then
    e, exp = exps_for_write(self, self.inst.row[0]), now_of(self) + self.ttl
  end
  for i = 1, #vs do
    list_append(t, vs[i], e, exp)
  end
end
function ListState:update(vs)
  if type(vs) ~= "table" then
    error(("list_state '%s': update: expected a sequence, got %s"):format(self.name,
      type(vs)), 2)
  end
  if #vs == 0 then
    return clear(self)
  end
  local t = {}
  for i = 1, #vs do
    t[i] = vs[i]
  end
  local r = writable(self)
  local slot = r[self.base + 3]
  self.inst.vals[slot] = t
  r[self.base + 2] = LUA
  if self.ttl > 0 then
    local e, exp = {}, now_of(self) + self.ttl
    for i = 1, #t do
      e[i] = exp
    end
    self.inst.exps[slot] = e
  end
end
function ListState:clear() return clear(self) end

local MapState = {}
MapState.__index = MapState

-- The map state's table with the entry k checked for expiry (dropped when expired).
local function map_for(h, k)
  local t = get_table(h)
  if t == nil or h.ttl == 0 or t[k] == nil then
    return t
  end
  local e = h.inst.exps[h.inst.row[0][h.base + 3]]
  if e[k] <= now_of(h) then
    t[k], e[k] = nil, nil
    if next(t) == nil then
      clear(h)
      return nil
    end
  end
  return t
end

-- The map state's table with every expired entry dropped, or nil.
local function live_map(h)
  local t = get_table(h)
  if t == nil or h.ttl == 0 then
    return t
  end
  local e = h.inst.exps[h.inst.row[0][h.base + 3]]
  local now = now_of(h)
  for k in pairs(t) do
    if e[k] <= now then
      t[k], e[k] = nil, nil -- clearing fields during a traversal is allowed
    end
  end
  if next(t) == nil then
    clear(h)
    return nil
  end
  return t
end

function MapState:get(k)
  local t = map_for(self, k)
  return t and t[k]
end
function MapState:put(k, v)
  no_nil(self, "put: the key", k)
  no_nil(self, "put: the value", v)
  local t = table_for_write(self)
  t[k] = v
  if self.ttl > 0 then
    exps_for_write(self, self.inst.row[0])[k] = now_of(self) + self.ttl
  end
end
function MapState:contains(k)
  local t = map_for(self, k)
  return t ~= nil and t[k] ~= nil
end
function MapState:remove(k)
  local t = map_for(self, k)
  if t and t[k] ~= nil then
    t[k] = nil
    if self.ttl > 0 then
      self.inst.exps[self.inst.row[0][self.base + 3]][k] = nil
    end
    if next(t) == nil then
      clear(self) -- an empty map is no entry
    end
  end
end
function MapState:pairs()
  return next, live_map(self) or EMPTY, nil
end
function MapState:is_empty()
  return live_map(self) == nil
end
function MapState:clear() return clear(self) end

local ReducingState = {}
ReducingState.__index = ReducingState
function ReducingState:get() return get_value(self) end
function ReducingState:add(v)
  no_nil(self, "add: the value", v)
  local old = get_value(self)
  if old == nil then
    return set_value(self, v)
  end
  local r = self.fn(old, v)
  if r == nil then
    error(("reducing_state '%s': the reduce function returned nil"):format(self.name), 2)
  end
  return set_value(self, r)
end
function ReducingState:clear() return clear(self) end

local AggregatingState = {}
AggregatingState.__index = AggregatingState
function AggregatingState:get()
  local acc = get_value(self)
  if acc == nil then
    return nil
  end
  return self.agg.result(acc)
end
function AggregatingState:add(v)
  local agg = self.agg
  local acc = get_value(self)
  if acc == nil then
    acc = agg.create()
  end
  acc = agg.add(v, acc)
  if acc == nil then
    error(("aggregating_state '%s': add returned nil (it returns the accumulator)")
      :format(self.name), 2)
  end
  return set_value(self, acc)
end
function AggregatingState:clear() return clear(self) end

local KINDS = {
  value_state = ValueState, list_state = ListState, map_state = MapState,
  reducing_state = ReducingState, aggregating_state = AggregatingState,
}

-- The state context open(self, rt) gets: the job's RuntimeContext plus the state getters.
local function state_getter(kind)
  return function(self, name, a, b)
    local call = "rt:" .. kind
    if type(name) ~= "string" or name == "" then
      error(("%s: expected a state name (a non-empty string), got %s"):format(call,
        type(name)), 2)
    end
    local fn, opts = nil, a
    if kind == "reducing_state" then
      if type(a) ~= "function" then
        error(("%s('%s', fn): expected a reduce function fn(a, b) -> c"):format(call, name), 2)
      end
      fn, opts = a, b
    elseif kind == "aggregating_state" then
      if type(a) ~= "table" then
        error(("%s('%s', agg): expected a table {create, add, result}"):format(call, name), 2)
      end
      for _, m in ipairs({ "create", "add", "result" }) do
        if type(a[m]) ~= "function" then
          error(("%s('%s', agg): '%s' must be a function"):format(call, name, m), 2)
        end
      end
      fn, opts = a, b
    end
    local ttl = 0
    if opts ~= nil then
      if type(opts) ~= "table" then
        error(("%s('%s'): options must be a table { ttl = \"1h\" }"):format(call, name), 2)
      end
      for k in pairs(opts) do
        if k ~= "ttl" then
          error(("%s('%s'): unknown option '%s' (known: ttl)"):format(call, name,
            tostring(k)), 2)
        end
      end
      if opts.ttl ~= nil then
        local ok, ms = pcall(duration.parse, opts.ttl, call .. " ttl")
        if not ok or ms <= 0 then
          error(("%s('%s'): ttl must be a positive duration such as \"10s\", got %s")
            :format(call, name, format.value(opts.ttl)), 2)
        end
        ttl = ms
      end
    end
    local inst = self.inst
    local node = inst.node
    local known = node.states[name]
    if known and (known.kind ~= kind or known.ttl ~= ttl) then
      error(("%s('%s'): the state '%s' is already a %s%s in this operator"):format(call, name,
        name, known.kind, known.ttl > 0 and (" with ttl " .. known.ttl .. " ms") or ""), 2)
    end
    if not known then
      known = { kind = kind, ttl = ttl, sid = #node.state_list }
      node.states[name] = known
      node.state_list[#node.state_list + 1] = name
      -- every subtask's rows get the new state (all are empty: states are made in open)
      for _, i in ipairs(node.instances) do
        if C.weir_kstate_set_states(i.kstate, #node.state_list) ~= 0 then
          error(("%s('%s'): keyed state can only be made in open(), before the first record")
            :format(call, name), 2)
        end
        i.dropped = dropped_t(CLEANUP * #node.state_list) -- what an expiry scan may empty
      end
    end
    local h = inst.handles[name]
    if not h then
      h = setmetatable({ inst = inst, sid = known.sid, base = known.sid * CELLS, ttl = ttl,
                         job = self.job, name = name,
                         kind = kind, fn = kind == "reducing_state" and fn or nil,
                         agg = kind == "aggregating_state" and fn or nil }, KINDS[kind])
      inst.handles[name] = h
    end
    return h
  end
end

local StateContext = {}
for kind in pairs(KINDS) do
  StateContext[kind] = state_getter(kind)
end

---The context open(self, rt) of a keyed operator gets: base (the RuntimeContext) and state.
function M.open_context(inst, base, job)
  local mt = getmetatable(base)
  local ctx = setmetatable({ inst = inst, job = job }, {
    __index = function(_, k)
      return StateContext[k] or base[k] or (mt and mt.__index and mt.__index[k])
    end,
  })
  -- the base's methods read their own fields: copy them over
  for k, v in pairs(base) do
    rawset(ctx, k, v)
  end
  return ctx
end

-- Timers and contexts ---------------------------------------------------------------------

local function check_time(call, t)
  if type(t) ~= "number" or t ~= t or (t % 1 ~= 0 and t > -INF and t < INF)
      or (math.abs(t) > MAX_TIME and t < INF) then
    error(("%s: the time must be a whole number of ms within +-2^52 (or +inf), got %s")
      :format(call, format.value(t)), 3)
  end
end

local TimerService = {}
TimerService.__index = TimerService
function TimerService:register_event_time_timer(t)
  check_time("register_event_time_timer", t)
  local inst = self.inst
  C.weir_timers_register(inst.timers, EVENT, t, inst.kid, 0, 0)
end
function TimerService:register_processing_time_timer(t)
  check_time("register_processing_time_timer", t)
  local inst = self.inst
  if C.weir_timers_register(inst.timers, PROCESSING, t, inst.kid, 0, 0) == 1 then
    self.job:processing_timers_changed(inst)
  end
end
function TimerService:delete_event_time_timer(t)
  check_time("delete_event_time_timer", t)
  local inst = self.inst
  C.weir_timers_delete(inst.timers, EVENT, t, inst.kid, 0, 0)
end
function TimerService:delete_processing_time_timer(t)
  check_time("delete_processing_time_timer", t)
  local inst = self.inst
  if C.weir_timers_delete(inst.timers, PROCESSING, t, inst.kid, 0, 0) == 1 then
    self.job:processing_timers_changed(inst)
  end
end
function TimerService:current_watermark() return self.inst.watermark end
function TimerService:current_processing_time() return self.job:now() end

-- What process and on_timer see as ctx (one per subtask; Flink's Context and OnTimerContext).
local Context = {}
Context.__index = Context
function Context:timestamp() return self.ts end
function Context:current_key() return self.key end
function Context:timer_service() return self.service end
function Context:current_watermark() return self.inst.watermark end
function Context:current_processing_time() return self.job:now() end
function Context:time_domain() return self.domain end
function Context:output(t, v)
  if type(t) ~= "table" or not t.id then
    error("ctx:output: expected an output tag", 2)
  end
  if util.is_nil(v) then
    error("ctx:output: cannot emit nil", 2)
  end
  local e = self.node.side[t.id]
  if e then
    e(self.inst.index, v, self.out_ts)
    self.job.op_slot[0] = self.node.id
  end
end

-- The subtask ------------------------------------------------------------------------------

local function init(job, node, inst)
  inst.kstate = ffi.gc(C.weir_kstate_new(), C.weir_kstate_free)
  inst.timers = ffi.gc(C.weir_timers_new(), C.weir_timers_free)
  inst.timer = timer_t()
  inst.dropped = dropped_t(CLEANUP)
  inst.vals, inst.exps, inst.handles = {}, {}, {}
  inst.keys, inst.key_ids = {}, {}
  inst.kid, inst.row = 0, row_ptr_t()
  inst.horizon = false -- weir's end of input: the last processing-time timer to fire
  inst.records = 0
  inst.firing = false
  inst.stall_wm, inst.stall_since, inst.stall_records, inst.stall_warned = false, 0, 0, false
  local ctx = setmetatable({ inst = inst, node = node, job = job, ts = nil, out_ts = nil,
                             key = nil, domain = nil, service = nil }, Context)
  ctx.service = setmetatable({ inst = inst, job = job }, TimerService)
  inst.kctx = ctx
end

---Wires a keyed_process node: node.push, node.on_watermark, node.on_processing_time (the
---operator interface of weir.windowing), the firers and places the error handler reads.
function M.instantiate(job, node)
  node.window_op = M
  node.states, node.state_list = node.states or {}, node.state_list or {}
  for _, inst in ipairs(node.instances) do
    init(job, node, inst)
  end
  job.timer_nodes[#job.timer_nodes + 1] = node
  local intern = wc.interner(true)
  local insts = {}
  for _, inst in ipairs(node.instances) do
    insts[inst.index] = inst
  end
  local emit, slot, id, is_nil = node.emit, job.op_slot, node.id, util.is_nil
  local rich, objs, fn = node.rich, node.objs, node.fn
  local process, on_timer = fn, nil
  if rich then
    process = fn.process
    on_timer = fn.on_timer
  end
  -- the per-record push is generated (weir.codegen), one prototype per operator: its own traces
  node.push = job:generate(node, "keyed_process", rich, process, objs, insts, intern, C, emit,
    is_nil)

  local cur_st, cur_ts = 0, nil
  local function out(x)
    if is_nil(x) then
      error("out(nil): records cannot be nil", 2)
    end
    emit(cur_st, x, cur_ts)
    slot[0] = id -- the user function runs on
  end

  -- Fires one timer: the user's on_timer for key id kid. Event-time output carries the
  -- timer's time, processing-time output none (Flink's KeyedProcessOperator).
  local guard = job:fire_guard()
  local function call_on_timer(inst, domain, t, kid)
    if not on_timer then
      return
    end
    inst.kid = kid
    inst.row[0] = C.weir_kstate_row(inst.kstate, kid)
    local ctx = inst.kctx
    local key = inst.keys[kid]
    local out_ts = domain == EVENT and t or nil
    ctx.ts, ctx.out_ts, ctx.key = t, out_ts, key
    ctx.domain = domain == EVENT and "event_time" or "processing_time"
    cur_st, cur_ts = inst.index, out_ts
    on_timer(objs[inst.index], t, ctx, out)
  end
  local function fire_timer(inst, domain, t, kid)
    if guard then
      guard(call_on_timer, inst, domain, t, kid)
    else
      call_on_timer(inst, domain, t, kid)
    end
  end

  node.on_watermark = function(inst, w)
    local tm = inst.timer
    inst.firing = true
    while C.weir_timers_pop(inst.timers, EVENT, w, tm) == 1 do
      fire_timer(inst, EVENT, tm.time_ms, tm.key)
    end
    inst.firing = false
  end
  node.on_processing_time = function(inst, t, as_if_due)
    local tm = inst.timer
    if as_if_due then
      t = math.min(t, M.end_horizon(inst)) -- weir's end of input: see end_horizon
    end
    while C.weir_timers_pop(inst.timers, PROCESSING, t, tm) == 1 do
      if as_if_due then
        job.now_override = tm.time_ms + 1
      end
      fire_timer(inst, PROCESSING, tm.time_ms, tm.key)
    end
    job.now_override = nil
  end
  job.firers[node.on_watermark] = { node = node }
  job.firers[node.on_processing_time] = { node = node, processing = true }
  job.places[call_on_timer] = { node = node, timer = true, domain = 2, time = 3, kid = 4 }
end

---The context open(self, rt) gets in a keyed operator (weir.run's open_functions).
function M.open_context_of(job, inst, base)
  return M.open_context(inst, base, job)
end

-- Rolling aggregates (weir.rolling builds the nodes): one value per key, the reduce of every
-- record so far; each record emits the new value with the record's timestamp
-- (StreamGroupedReduceOperator).
function M.instantiate_rolling(job, node)
  node.window_op = M
  node.states, node.state_list = { ["reduce"] = { kind = "value_state", ttl = 0, sid = 0 } },
    { "reduce" }
  for _, inst in ipairs(node.instances) do
    init(job, node, inst)
  end
  job.timer_nodes[#job.timer_nodes + 1] = node
  node.on_processing_time = function() end
  local intern = wc.interner(true)
  local insts = {}
  for _, inst in ipairs(node.instances) do
    insts[inst.index] = inst
  end
  local rich = node.rich
  for _, inst in ipairs(node.instances) do
    C.weir_kstate_set_states(inst.kstate, 1)
  end
  local function full()
    error("keyed state is full (2^31 keys in this subtask)", 0)
  end
  node.push = job:generate(node, "rolling", rich, rich and node.fn.reduce or node.reduce_fn,
    node.objs, insts, intern, C, node.emit, NUMBER, LUA, full)
end

-- The operator interface (weir.windowing) and the snapshot's enumeration -----------------------

function M.stats(_, inst)
  local timers = inst.timers
  return {
    open_windows = 0, elements = 0,
    store_bytes = C.weir_kstate_stat(inst.kstate, C.WEIR_STORE_BYTES),
    state_entries = C.weir_kstate_stat(inst.kstate, C.WEIR_STORE_OPEN),
    event_timers = C.weir_timers_count(timers, EVENT),
    processing_timers = C.weir_timers_count(timers, PROCESSING),
    next_event_timer = C.weir_timers_next(timers, EVENT),
    next_processing_timer = C.weir_timers_next(timers, PROCESSING),
  }
end

-- A keyed operator has no windows: the window tools skip it (weir.windowing.runs), and its
-- state is listed by M.entries and M.timers.
M.no_windows = true

function M.list()
  return { windows = {}, timers = {}, gstate = {} }
end

---At weir's end of input (job.ending) the processing-time timers pending when it began fire,
---and those on_timer registers at or before the last of them; a later one would never let the
---end come (a timer that registers the next one, as a heartbeat check does), so it is
---dropped. The horizon is that last time, taken once.
function M.end_horizon(inst)
  local h = inst.horizon
  if not h then
    h = -INF
    local n = C.weir_timers_count(inst.timers, PROCESSING)
    if n > 0 then
      local buf = timers_array_t(n)
      C.weir_timers_list(inst.timers, PROCESSING, buf, n)
      for i = 0, n - 1 do
        h = math.max(h, buf[i].time_ms)
      end
    end
    inst.horizon = h
  end
  return h
end

function M.last_processing_time(_, inst)
  return M.end_horizon(inst)
end

function M.next_processing_time(_, inst)
  local t = C.weir_timers_next(inst.timers, PROCESSING)
  if inst.kctx.job.ending and t > M.end_horizon(inst) then
    return INF
  end
  return t
end

function M.key_of(_, inst, kid)
  return inst.keys[kid]
end

local function key_group(node, key)
  local maxp = node.max_parallelism or 128
  local h = keys.java_hash(key)
  if h then
    return C.weir_keygroup_of(h, maxp)
  end
  return nil
end

---Every live state entry of one subtask as { key_group, key, state (its name), value, expires
---(nil without TTL) }, ordered by key group, then key id (first seen first), then state id:
---the logical view a snapshot section writes. A list or map value is the table itself
---(borrowed), with each element's expiry in elem_expires (the table of them, borrowed: nil
---without TTL). An expired value not yet cleaned up is left out.
function M.entries(node, inst)
  local out = {}
  local ks, key_out = inst.kstate, pair_t()
  local n = #node.state_list
  local now = inst.kctx.job:now()
  for row = 0, C.weir_kstate_capacity(ks) - 1 do
    local r = C.weir_kstate_at(ks, row, key_out)
    if r ~= nil then
      local kid = key_out[0]
      local key = inst.keys[kid]
      for sid = 0, n - 1 do
        local b = sid * CELLS
        local kind, e = r[b + 2], r[b + 1]
        if kind ~= 0 and not (e < INF and e <= now) then
          out[#out + 1] = { key_group = key_group(node, key), key = key, kid = kid,
                            state = node.state_list[sid + 1], sid = sid,
                            value = kind == NUMBER and r[b] or inst.vals[r[b + 3]],
                            expires = e < INF and e or nil, elem_expires = inst.exps[r[b + 3]] }
        end
      end
    end
  end
  table.sort(out, function(a, b)
    if a.key_group ~= b.key_group then
      return (a.key_group or -1) < (b.key_group or -1)
    end
    if a.kid ~= b.kid then
      return a.kid < b.kid
    end
    return a.sid < b.sid
  end)
  return out
end

---The pending timers of one subtask, each domain in pop order (time, then registration; event
---time first):
---{ domain ("event_time"/"processing_time"), time, key }.
function M.timers(_, inst)
  local out = {}
  for _, d in ipairs({ EVENT, PROCESSING }) do
    local n = C.weir_timers_count(inst.timers, d)
    if n > 0 then
      local buf = timers_array_t(n)
      C.weir_timers_list(inst.timers, d, buf, n)
      for i = 0, n - 1 do
        out[#out + 1] = { domain = d == EVENT and "event_time" or "processing_time",
                          time = buf[i].time_ms, key = inst.keys[buf[i].key] }
      end
    end
  end
  return out
end

---Puts what M.entries and M.timers listed back into one subtask whose open() has run (so its
---states exist), before its first record: the keys are interned in the entries' order, each
---value goes into its key's row with its expiry, the timers are registered in their order (so
---equal times fire as before). A state the entries name that open() did not make is an error.
function M.restore(node, inst, entries, timers)
  local intern = wc.interner(true)
  local ks = inst.kstate
  for _, e in ipairs(entries) do
    local known = node.states[e.state]
    if not known then
      error(("restore: %s has no state '%s'"):format(node.label, tostring(e.state)), 2)
    end
    local kid = intern(inst, e.key)
    local r = C.weir_kstate_row_put(ks, kid)
    local b = known.sid * CELLS
    local slot = r[b + 3]
    if type(e.value) == "number" then
      r[b], r[b + 2] = e.value, NUMBER
    else
      inst.vals[slot], r[b + 2] = e.value, LUA
      inst.exps[slot] = e.elem_expires
    end
    r[b + 1] = e.expires or INF
  end
  local changed = false
  for _, t in ipairs(timers) do
    local d = t.domain == "event_time" and EVENT or PROCESSING
    C.weir_timers_register(inst.timers, d, t.time, intern(inst, t.key), 0, 0)
    changed = changed or d == PROCESSING
  end
  if changed then
    inst.kctx.job:processing_timers_changed(inst)
  end
end

return M
