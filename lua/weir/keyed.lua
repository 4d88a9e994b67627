-- weir.keyed: the keyed operators, Flink's KeyedProcessOperator (keyed:process with state and
-- timers) and StreamGroupedReduceOperator (the rolling aggregates of weir.rolling). Owns, per
-- subtask, the fields of a keyed operator (made at instantiate), the timers (runtime/timers.c:
-- (time, key id) per domain, a set as in Flink), key interning, the timer service and the
-- contexts process and on_timer see, the firing of timers, and the logical enumeration of the
-- timers a snapshot reads (M.timers; M.entries and the state's part of M.restore are
-- weir.keyed_state's, as are the state handles, their TTL and the context open() gets). It
-- plugs into the job as a window operator does (weir.windowing's operator interface:
-- node.window_op), so the processing-timer registry, metrics and status see it.
local ffi = require("ffi")
local C = require("weir.ffi")
local util = require("weir.util")
local ckvalue = require("weir.ckvalue")
local duration = require("weir.duration")
local format = require("weir.format")
local wc = require("weir.wincontext")
local state = require("weir.keyed_state")

local M = {}

local EVENT, PROCESSING = tonumber(C.WEIR_TIME_EVENT), tonumber(C.WEIR_TIME_PROCESSING)
local NUMBER, LUA = tonumber(C.WEIR_KSTATE_NUMBER), tonumber(C.WEIR_KSTATE_LUA)
local INF = math.huge
local MAX_TIME = duration.MAX_TIME
local CLEANUP = state.CLEANUP
local timer_t = ffi.typeof("weir_timer_t")
local dropped_t = ffi.typeof("int32_t[?]")
local row_ptr_t = ffi.typeof("double *[1]")

---The context open(self, rt) of a keyed operator gets: base (the RuntimeContext) and state
---(weir.keyed_state).
M.open_context = state.open_context

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
function TimerService:current_processing_time() return (self.job:now()) end

-- What process and on_timer see as ctx (one per subtask; Flink's Context and OnTimerContext).
local Context = {}
Context.__index = Context
function Context:timestamp() return self.ts end
function Context:current_key() return self.key end
function Context:timer_service() return self.service end
function Context:current_watermark() return self.inst.watermark end
function Context:current_processing_time() return (self.job:now()) end
function Context:time_domain() return self.domain end
---ctx:output(tag, v) of a context with node, inst and job: v to the side output of tag at
---time ts (the interval join's context too). Errors are the caller's caller's (level 3).
local function side_output(ctx, t, v, ts)
  if type(t) ~= "table" or not t.id then
    error("ctx:output: expected an output tag", 3)
  end
  if util.is_nil(v) then
    error("ctx:output: cannot emit nil", 3)
  end
  local e = ctx.node.side[t.id]
  if e then
    e(ctx.inst.index, v, ts)
    ctx.job.op_slot[0] = ctx.node.id
  end
end
M.side_output = side_output

function Context:output(t, v)
  side_output(self, t, v, self.out_ts)
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
---process_fn replaces fn.process (weir.connect's co_process: process1). Returns the key
---interner and the subtasks by index, for a second input's push.
function M.instantiate(job, node, process_fn)
  node.window_op = M
  -- a new job of the same plan (the REPL's :start again, :undo) makes its states again in open()
  node.states, node.state_list = {}, {}
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
    process = process_fn or fn.process
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
  -- a failure reads the timer from inst.kctx, not from call_on_timer's arguments: after a
  -- compiled trace exits, a local no longer used (dead) may hold a stale value
  job.places[call_on_timer] = { node = node, timer = true }
  return intern, insts
end

---Makes one subtask's keyed fields (state, timers, keys, contexts): for weir.interval, a keyed
---operator of its own.
M.init = init

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
    local buf, n = util.timers_list(inst.timers, PROCESSING)
    for i = 0, n - 1 do
      h = math.max(h, buf[i].time_ms)
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

---Every live state entry of one subtask (weir.keyed_state.entries): the logical view a
---snapshot section writes.
M.entries = state.entries

---The pending timers of one subtask, each domain in pop order (time, then registration; event
---time first):
---{ domain ("event_time"/"processing_time"), time, key, ns } (ns: the timer's namespace,
---weir.interval's side; nil for 0).
function M.timers(_, inst)
  local out = {}
  for _, d in ipairs({ EVENT, PROCESSING }) do
    local buf, n = util.timers_list(inst.timers, d)
    for i = 0, n - 1 do
      out[#out + 1] = { domain = d == EVENT and "event_time" or "processing_time",
                        time = buf[i].time_ms, key = inst.keys[buf[i].key],
                        ns = buf[i].start ~= 0 and buf[i].start or nil } -- weir.interval's side
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
  state.restore_entries(node, inst, entries, intern)
  local changed = false
  for _, t in ipairs(timers) do
    local d = t.domain == "event_time" and EVENT or PROCESSING
    C.weir_timers_register(inst.timers, d, t.time, intern(inst, t.key), t.ns or 0, 0)
    changed = changed or d == PROCESSING
  end
  if changed then
    inst.kctx.job:processing_timers_changed(inst)
  end
end

---Empties every subtask of node: its keyed state (every state of every key) and its timers of
---both domains, as a fresh job has them (`--verify-checkpoints` calls it before a restore, so
---what the restore does not bring back is gone). Between batches only.
function M.reset(node)
  local key = ffi.new("double[1]")
  for _, inst in ipairs(node.instances) do
    local kids = {}
    for r = 0, C.weir_kstate_capacity(inst.kstate) - 1 do
      if C.weir_kstate_at(inst.kstate, r, key) ~= nil then
        kids[#kids + 1] = key[0]
      end
    end
    for _, kid in ipairs(kids) do
      for sid = 0, #node.state_list - 1 do
        C.weir_kstate_clear(inst.kstate, kid, sid)
      end
    end
    for k in pairs(inst.vals) do
      inst.vals[k] = nil
    end
    for k in pairs(inst.exps) do
      inst.exps[k] = nil
    end
    for _, d in ipairs({ EVENT, PROCESSING }) do
      while C.weir_timers_pop(inst.timers, d, math.huge, inst.timer) == 1 do end
    end
    if node.on_reset then
      node.on_reset(inst) -- weir.interval's kept rows
    end
    inst.kid = 0
  end
end

-- Checkpoints: every subtask's keyed state and timers, by key group ---------------------------
-- Any node whose subtasks hold this module's fields (init: inst.kstate, inst.timers with key
-- ids and window [0, 0), inst.keys, inst.key_ids, inst.kctx) and node.states/node.state_list
-- is covered: weir.checkpoint_parts registers a part for each (keyed/<uid>).

---The keyed state and timers of all of node's subtasks as {[key group] = section}, written
---logically: a section holds the keys (encoded with encode(value, what), the codec's), the
---states it uses ({[name] = {kind, ttl}}), the entries ({k = key index, s = state name, n = a
---number or v = the encoded value, e = expiry, x = the encoded element expiries of a TTL'd
---list or map}) and the timers ({k, d = domain, t = time, st = subtask, o = place in the
---subtask's pop order of its domain, ns = the timer's namespace: weir.interval's side}). Never
---slot or key ids. Not for the hot path.
function M.snapshot_groups(node, encode)
  local groups = {}
  local function group(kg)
    local g = groups[kg]
    if not g then
      g = { states = {}, keys = {}, entries = {}, timers = {} }
      groups[kg] = g
    end
    return g
  end
  local function enc(inst, key, name, v)
    local ok, s = pcall(encode, ckvalue.copy(v), "value") -- records and json.null as markers
    if not ok then
      error(("%s, subtask %d/%d, key %s, state '%s': %s"):format(node.label, inst.index + 1,
        node.parallelism, format.value(key), name, tostring(s)), 0)
    end
    return s
  end
  for _, inst in ipairs(node.instances) do
    local index = {} -- key id -> index in its group's keys (a key is in one group)
    local function key_index(g, kid)
      local i = index[kid]
      if not i then
        i = #g.keys + 1
        g.keys[i] = inst.keys[kid]
        index[kid] = i
      end
      return i
    end
    for _, e in ipairs(state.entries(node, inst)) do
      local g = group(e.key_group or 0)
      local known = node.states[e.state]
      g.states[e.state] = { kind = known.kind, ttl = known.ttl }
      local x = { k = key_index(g, e.kid), s = e.state, e = e.expires }
      if type(e.value) == "number" then
        x.n = e.value
      else
        x.v = enc(inst, e.key, e.state, e.value)
      end
      if e.elem_expires and type(e.value) == "table" then
        x.x = enc(inst, e.key, e.state, e.elem_expires)
      end
      g.entries[#g.entries + 1] = x
    end
    for _, d in ipairs({ EVENT, PROCESSING }) do
      local buf, n = util.timers_list(inst.timers, d)
      for i = 0, n - 1 do
        local kid = tonumber(buf[i].key)
        local g = group(state.key_group(node, inst.keys[kid]) or 0)
        g.timers[#g.timers + 1] = { k = key_index(g, kid), d = d, t = buf[i].time_ms,
                                    st = inst.index, o = i,
                                    ns = buf[i].start ~= 0 and tonumber(buf[i].start) or nil }
      end
    end
  end
  for kg, g in pairs(groups) do
    local ok, s = pcall(encode, g.keys, "keys")
    if not ok then
      error(("%s, key group %d: %s"):format(node.label, kg, tostring(s)), 0)
    end
    g.keys = s
  end
  return groups
end

---Puts back into subtask inst (its open() has run, so its states exist; before its first
---record) what snapshot_groups wrote for the key groups it owns under node's parallelism (the
---hash exchange's rule: the checkpoint may come from another parallelism): entries in key
---group order, timers registered in (old subtask, place) order, so that equal times fire in
---their registration order as before (on a rescale, an old subtask's before the next's).
---skip: state names whose entries are dropped. decode is the codec's.
function M.restore_groups(node, inst, groups, decode, skip)
  local maxp, p = node.max_parallelism or 128, node.parallelism
  local kgs = {}
  for kg in pairs(groups) do
    if C.weir_keygroup_subtask(kg, maxp, p) == inst.index then
      kgs[#kgs + 1] = kg
    end
  end
  table.sort(kgs)
  local entries, timers = {}, {}
  for _, kg in ipairs(kgs) do
    local g = groups[kg]
    local ks = decode(g.keys)
    for _, x in ipairs(g.entries) do
      if not (skip and skip[x.s]) then
        local v = x.n
        if v == nil then
          v = ckvalue.thaw(decode(x.v))
        end
        entries[#entries + 1] = { key = ks[x.k], state = x.s, value = v, expires = x.e,
                                  elem_expires = x.x and decode(x.x) or nil }
      end
    end
    for _, t in ipairs(g.timers) do
      timers[#timers + 1] = { domain = t.d == EVENT and "event_time" or "processing_time",
                              time = t.t, key = ks[t.k], st = t.st, o = t.o, ns = t.ns }
    end
  end
  table.sort(timers, function(a, b)
    if a.st ~= b.st then
      return a.st < b.st
    end
    return a.o < b.o
  end)
  M.restore(node, inst, entries, timers)
end

return M
