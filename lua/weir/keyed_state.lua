-- weir.keyed_state: the keyed state of weir.keyed's operators. Owns the layout of a key's row
-- (runtime/kstate.c: per state WEIR_KSTATE_CELLS cells, numbers in C, other values in inst.vals
-- by the cell's value slot, list and map elements' expiries in inst.exps), the state handles
-- open() gets (rt:value_state and the others) and the open context that hands them out, TTL
-- (Flink's StateTtlConfig: on create and write, never return expired, processing time,
-- incremental cleanup), and the logical view of the state a snapshot reads and a restore puts
-- back (M.entries, M.restore_entries). weir.keyed creates the subtask's fields (inst.kstate,
-- inst.row, inst.kid, ...) and sets the current row before each record and timer.
local ffi = require("ffi")
local C = require("weir.ffi")
local duration = require("weir.duration")
local format = require("weir.format")
local keys = require("weir.keys")

local M = {}

local NUMBER, LUA = tonumber(C.WEIR_KSTATE_NUMBER), tonumber(C.WEIR_KSTATE_LUA)
local CELLS = tonumber(C.WEIR_KSTATE_CELLS)
local INF = math.huge
local CLEANUP = 5 -- entries an incremental TTL scan looks at per TTL'd write (Flink's default)
M.CLEANUP = CLEANUP
local dropped_t = ffi.typeof("int32_t[?]")
local pair_t = ffi.typeof("double[2]")
local EMPTY = setmetatable({}, { __newindex = function() error("read-only", 2) end })

-- State handles -------------------------------------------------------------------------------
-- A handle belongs to one subtask and works on the subtask's current row (inst.row[0]: the cells
-- of the current key's states, looked up once per record and per timer, or NULL). The pointer
-- lives in a one-element cdata array, not in a table field: a pointer stored in a table is a
-- boxed cdata, an allocation per record, while one written into an array is raw bytes. For the
-- same reason no local holds it where a Lua call, a loop or a return follows in its scope, and
-- no function takes or returns it: those read inst.row[0] again, and a local r appears only in
-- straight-line code after the function's last call. A pointer in a slot of any frame on the
-- stack where a compiled trace ends (a link to the own trace of a called function or of a
-- loop; a return to the interpreter) is boxed there, and where traces end varies from run to
-- run (LuaJIT's random trace penalties): when writable's own trace, recorded on a TTL'd write,
-- ends in the trace of its expiry loop, every trace that calls writable links to it instead of
-- inlining it, and the row pointer writable held there and returned cost an allocation per
-- write (keyed_spec's "no garbage" case failed so about one run in 300). A handle's fields:
-- inst, sid (the state id, the same in every subtask), base (sid * WEIR_KSTATE_CELLS: where its
-- cells start in the row), ttl (ms, 0: none), job (for the clock), name, kind, and fn / agg
-- for reducing and aggregating state. The cells: [base] the number, [base + 1] the expiry,
-- [base + 2] the kind, [base + 3] the value slot (inst.vals[slot] holds a value that is no
-- number).

local function now_of(h)
  return (h.job:now())
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

-- Whether the state holds a live value in the current row (an expired value is emptied here:
-- Flink's NeverReturnExpired).
local function live(h)
  local row = h.inst.row
  if row[0] == nil then
    return false
  end
  local b = h.base
  if row[0][b + 2] == 0 then
    return false
  end
  local e = row[0][b + 1]
  if e < INF and e <= now_of(h) then
    clear(h)
    return false
  end
  return true
end

-- Makes the current row when absent; with a TTL the state's expiry moves to now + ttl
-- (OnCreateAndWrite) and a few rows are checked for expired states (incremental cleanup).
local function writable(h)
  local inst = h.inst
  local row = inst.row
  if row[0] == nil then
    row[0] = C.weir_kstate_row_put(inst.kstate, inst.kid)
    if row[0] == nil then
      error(("%s '%s': keyed state is full (2^31 keys in this subtask)"):format(h.kind, h.name),
        3)
    end
  end
  if h.ttl > 0 then
    local now = now_of(h)
    local expires = now + h.ttl
    row[0][h.base + 1] = expires
    local dropped = inst.dropped
    -- the value slots of the expired values Lua holds (a number state's are not listed: the
    -- loop has no trip for it)
    local n = C.weir_kstate_expire(inst.kstate, now, CLEANUP, dropped)
    for i = 0, n - 1 do
      local slot = dropped[i]
      inst.vals[slot], inst.exps[slot] = nil, nil
    end
  end
end

local function get_value(h)
  if not live(h) then
    return nil
  end
  local r, b = h.inst.row[0], h.base
  if r[b + 2] == NUMBER then
    return r[b]
  end
  return h.inst.vals[r[b + 3]]
end

local function set_value(h, v)
  writable(h)
  local r, b = h.inst.row[0], h.base
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
  if not live(h) then
    return nil
  end
  return h.inst.vals[h.inst.row[0][h.base + 3]]
end

-- The Lua table of a list or map state, created when absent (and the TTL refreshed).
local function table_for_write(h)
  writable(h)
  local r, b = h.inst.row[0], h.base
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

-- The methods call the helpers with plain calls, not tail calls: LuaJIT counts a trace's tail
-- calls towards its loop unroll limit (15), and a trace through a few records' state calls
-- aborted there ("loop unroll limit reached" in the connect_co_process shape).
local ValueState = {}
ValueState.__index = ValueState
function ValueState:value() return (get_value(self)) end
function ValueState:update(v)
  if v == nil then
    clear(self) -- Flink: update(null) clears the state
    return
  end
  set_value(self, v)
end
function ValueState:clear() clear(self) end

-- List and map state with a TTL keep each element's expiry (Flink's TtlListState, TtlMapState)
-- in inst.exps[slot], beside the values: a list's expiries never decrease (each write is at the
-- clock's reading then), so its expired elements are always a prefix; the row's expiry is the
-- last write's, so the whole state expires when its last element does.

-- The expiries of the state's table in the current row (created when absent), for a write.
local function exps_for_write(h)
  local exps = h.inst.exps
  local slot = h.inst.row[0][h.base + 3]
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
    list_append(t, v, exps_for_write(self), now_of(self) + ttl)
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
    e, exp = exps_for_write(self), now_of(self) + self.ttl
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
    clear(self)
    return
  end
  local t = {}
  for i = 1, #vs do
    t[i] = vs[i]
  end
  writable(self)
  local slot = self.inst.row[0][self.base + 3]
  self.inst.vals[slot] = t
  self.inst.row[0][self.base + 2] = LUA
  if self.ttl > 0 then
    local e, exp = {}, now_of(self) + self.ttl
    for i = 1, #t do
      e[i] = exp
    end
    self.inst.exps[slot] = e
  end
end
function ListState:clear() clear(self) end

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
    exps_for_write(self)[k] = now_of(self) + self.ttl
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
function MapState:clear() clear(self) end

local ReducingState = {}
ReducingState.__index = ReducingState
function ReducingState:get() return (get_value(self)) end
function ReducingState:add(v)
  no_nil(self, "add: the value", v)
  local old = get_value(self)
  if old == nil then
    set_value(self, v)
    return
  end
  local r = self.fn(old, v)
  if r == nil then
    error(("reducing_state '%s': the reduce function returned nil"):format(self.name), 2)
  end
  set_value(self, r)
end
function ReducingState:clear() clear(self) end

local AggregatingState = {}
AggregatingState.__index = AggregatingState
function AggregatingState:get()
  local acc = get_value(self)
  if acc == nil then
    return nil
  end
  return (self.agg.result(acc))
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
  set_value(self, acc)
end
function AggregatingState:clear() clear(self) end

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

-- The snapshot's enumeration ---------------------------------------------------------------

local function key_group(node, key)
  local maxp = node.max_parallelism or 128
  local h = keys.java_hash(key)
  if h then
    return C.weir_keygroup_of(h, maxp)
  end
  return nil
end
---The key group of key in node (as the hash exchange computes it), nil for a key that has none.
M.key_group = key_group

---Every live state entry of one subtask as { key_group, key, state (its name), value, expires
---(nil without TTL) }, ordered by key group, then key id (first seen first), then state id:
---the logical view a snapshot section writes. A list or map value is the table itself
---(borrowed), with each element's expiry in elem_expires (the table of them, borrowed: nil
---without TTL). An expired value not yet cleaned up is left out. An operator that keeps a
---state's table in a form of its own sets node.state_view(sid, t) -> the logical value (a new
---table; weir.interval's buffers) and node.state_unview(sid, value) -> its form (restore).
function M.entries(node, inst)
  local out = {}
  local view = node.state_view
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
          local value = kind == NUMBER and r[b] or inst.vals[r[b + 3]]
          if view and kind ~= NUMBER then
            value = view(sid, value)
          end
          out[#out + 1] = { key_group = key_group(node, key), key = key, kid = kid,
                            state = node.state_list[sid + 1], sid = sid, value = value,
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

---Puts entries as M.entries listed them back into one subtask whose open() has run (so its
---states exist), before its first record: the keys are interned with intern(inst, key) in the
---entries' order, each value goes into its key's row with its expiry. A state the entries name
---that open() did not make is an error (level 3: the caller of weir.keyed's restore).
function M.restore_entries(node, inst, entries, intern)
  local ks = inst.kstate
  for _, e in ipairs(entries) do
    local known = node.states[e.state]
    if not known then
      error(("restore: %s has no state '%s'"):format(node.label, tostring(e.state)), 3)
    end
    local kid = intern(inst, e.key)
    local r = C.weir_kstate_row_put(ks, kid)
    local b = known.sid * CELLS
    local slot = r[b + 3]
    if type(e.value) == "number" then
      r[b], r[b + 2] = e.value, NUMBER
    else
      local v = e.value
      if node.state_unview then
        v = node.state_unview(known.sid, v)
      end
      inst.vals[slot], r[b + 2] = v, LUA
      inst.exps[slot] = e.elem_expires
    end
    r[b + 1] = e.expires or INF
  end
end

return M
