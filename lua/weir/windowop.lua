-- weir.windowop: Flink's WindowOperator and EvictingWindowOperator (SEMANTICS §5, §7, §8) for
-- one window node. State per subtask: the C store maps (key, window) to a slot and holds the
-- trigger's numeric state cells; C timers hold (time, key, window); Lua holds the contents of
-- each slot (the elements, or the reduce/aggregate accumulator) by slot id.
local ffi = require("ffi")
local C = require("weir.ffi")
local windows = require("weir.windows")
local triggers = require("weir.triggers")
local evictors = require("weir.evictors")
local util = require("weir.util")
local duration = require("weir.duration")

local M = {}

local INF = math.huge
local MAX_EXACT, MAX_TIME = duration.MAX_EXACT, duration.MAX_TIME
local abs = math.abs
local EVENT, PROCESSING = tonumber(C.WEIR_TIME_EVENT), tonumber(C.WEIR_TIME_PROCESSING)
local CELLS = 4
local timer_t = ffi.typeof("weir_timer_t")
local NAN = 0 / 0

local function cleanup_time(node, maxts)
  if not node.assigner.is_event_time then
    return maxts
  end
  local t = maxts + node.lateness
  if t >= 9.2e18 then
    return INF
  end
  return t
end

---Fails a record that reaches an event-time window without a timestamp it can place: none, or
---one outside the time range, which an assigner cannot give, but a window can: its results
---carry the window's max timestamp (+inf for the global window; past 2^52 for a window that
---ends there). Keeping every window's input within +-2^52 keeps its times exact.
function M.no_timestamp(ts)
  if ts == nil then
    error("the record has no timestamp: an event-time window needs "
      .. "assign_timestamps_and_watermarks before it", 0)
  end
  error(("the record's timestamp is %s, outside the time range [-2^52, 2^52] ms (a window's "
    .. "results carry its max timestamp, +inf for the global window): an event-time window "
    .. "needs assign_timestamps_and_watermarks before it"):format(duration.show(ts)), 0)
end

-- Contexts ---------------------------------------------------------------------------------

local State = {}
State.__index = State

local function cell_index(node, name)
  local idx = node.cell_of[name]
  if idx == nil then
    idx = node.cell_count < CELLS and node.cell_count or false
    node.cell_count = node.cell_count + 1
    node.cell_of[name] = idx
  end
  return idx
end

function State:get()
  local ctx = self.ctx
  local slot = ctx.slot
  if slot < 0 then
    return nil
  end
  local lua = ctx.inst.lua_state[slot]
  if lua and lua[self.name] ~= nil then
    return lua[self.name]
  end
  local idx = self.idx
  if idx then
    local v = C.weir_store_cells(ctx.inst.store, slot)[idx]
    if v == v then
      return v
    end
  end
  return nil
end

function State:set(v)
  if v == nil then
    return self:clear()
  end
  local ctx = self.ctx
  local slot = ctx:ensure_slot()
  local inst = ctx.inst
  local idx = self.idx
  if idx and type(v) == "number" and v == v then
    C.weir_store_cells(inst.store, slot)[idx] = v
    local lua = inst.lua_state[slot]
    if lua then
      lua[self.name] = nil
    end
  else
    local lua = inst.lua_state[slot] or {}
    inst.lua_state[slot] = lua
    lua[self.name] = v
    if idx then
      C.weir_store_cells(inst.store, slot)[idx] = NAN
    end
  end
end

function State:clear()
  local ctx = self.ctx
  local slot = ctx.slot
  if slot < 0 then
    return
  end
  local lua = ctx.inst.lua_state[slot]
  if lua then
    lua[self.name] = nil
  end
  if self.idx then
    C.weir_store_cells(ctx.inst.store, slot)[self.idx] = NAN
  end
end

-- The trigger context: one per subtask, pointed at the current (key, window) before each call.
local TriggerContext = {}
TriggerContext.__index = TriggerContext

function TriggerContext:current_watermark()
  return self.inst.watermark
end

function TriggerContext:current_processing_time()
  return self.job:now()
end

-- A timer's time: a whole number of ms within +-2^53 (API.md, Time range), or +inf, the end of
-- time (the global window's max timestamp), which fires at the end of input.
local function check_time(ctx, t, what)
  if t ~= INF then
    local why = duration.time_problem(t, MAX_EXACT, "2^53")
    if why then
      error(("trigger %s: %s was given %s, %s"):format(ctx.node.trigger.name, what,
        duration.show(t), why), 3)
    end
  end
end

---weir run --check-triggers: one warning per trigger and kind of mistake, on stderr.
local function warn_once(ctx, kind, text)
  local node = ctx.node
  node.warned = node.warned or {}
  if node.warned[kind] then
    return
  end
  node.warned[kind] = true
  io.stdout:flush()
  io.stderr:write(("weir: warning: %s: trigger %s%s: %s\n"):format(node.label,
    node.trigger.name, node.trigger.defined and (" (" .. node.trigger.defined .. ")") or "",
    text))
end
M.warn_once = warn_once

function TriggerContext:register_event_time_timer(t)
  check_time(self, t, "register_event_time_timer")
  if self.job.check_triggers and t <= self.inst.watermark then
    warn_once(self, "behind", ("registered an event-time timer at %s, already behind the "
      .. "watermark %s: it fires only %s"):format(tostring(t), tostring(self.inst.watermark),
      self.inst.firing and "because timers are firing now" or "with the next watermark"))
  end
  local w = self.window
  C.weir_timers_register(self.inst.timers, EVENT, t, self.kid, w.start, w.stop)
end

function TriggerContext:delete_event_time_timer(t)
  check_time(self, t, "delete_event_time_timer")
  local w = self.window
  C.weir_timers_delete(self.inst.timers, EVENT, t, self.kid, w.start, w.stop)
end

function TriggerContext:register_processing_time_timer(t)
  check_time(self, t, "register_processing_time_timer")
  local w = self.window
  C.weir_timers_register(self.inst.timers, PROCESSING, t, self.kid, w.start, w.stop)
  self.job:processing_timers_changed()
end

function TriggerContext:delete_processing_time_timer(t)
  check_time(self, t, "delete_processing_time_timer")
  local w = self.window
  C.weir_timers_delete(self.inst.timers, PROCESSING, t, self.kid, w.start, w.stop)
  self.job:processing_timers_changed()
end

function TriggerContext:state(name)
  local s = self.states[name]
  if not s then
    s = setmetatable({ ctx = self, name = name, idx = cell_index(self.node, name) }, State)
    self.states[name] = s
  end
  return s
end

---During on_merge: merges the state `name` of the windows being merged into this window's
---with fn(a, b), and returns the result (nil when none of them had it).
function TriggerContext:merge_state(name, fn)
  local merged = self.merging
  if not merged then
    error("ctx:merge_state is only available in on_merge", 2)
  end
  local state, inst = self:state(name), self.inst
  local own, acc = self.slot, nil
  for i = 1, #merged do
    local m = merged[i]
    self.slot = C.weir_store_find(inst.store, self.kid, m.start, m.stop)
    local v = state:get()
    if v ~= nil then
      acc = acc == nil and v or fn(acc, v)
    end
  end
  self.slot = own
  if acc ~= nil then
    local mine = state:get()
    if mine ~= nil then
      acc = fn(mine, acc)
    end
    state:set(acc)
  end
  return acc
end

function TriggerContext:ensure_slot()
  if self.slot < 0 then
    local w = self.window
    self.slot = C.weir_store_slot(self.inst.store, self.kid, w.start, w.stop)
  end
  return self.slot
end

-- The window function's context (ProcessWindowFunction.Context).
local WindowContext = {}
WindowContext.__index = WindowContext

function WindowContext:window()
  -- no window object yet (the fast operator's fires): a fresh one, not kept here, so that a
  -- window made on a trace and only read stays unallocated (sunk)
  return self.win or windows.window(self.wstart, self.wstop)
end

function WindowContext:current_watermark()
  return self.inst.watermark
end

function WindowContext:current_processing_time()
  return self.job:now()
end

function WindowContext:output(tag, v)
  if type(tag) ~= "table" or not tag.id then
    error("ctx:output: expected an output tag", 2)
  end
  if util.is_nil(v) then
    error("ctx:output: cannot emit nil", 2)
  end
  local e = self.node.side[tag.id]
  if e then
    e(self.inst.index, v, self:window():max_timestamp())
  end
end

function WindowContext:window_state()
  if self.node.assigner.merging then
    error("ctx:window_state() is not available for merging (session) windows, as in Flink", 2)
  end
  local inst, w = self.inst, self:window()
  local slot = C.weir_store_slot(inst.wstore or inst.store, self.kid, w.start, w.stop)
  local s = inst.wstate[slot]
  if not s then
    s = {}
    inst.wstate[slot] = s
  end
  return s
end

function WindowContext:global_state()
  local g = self.inst.gstate[self.kid]
  if not g then
    g = {}
    self.inst.gstate[self.kid] = g
  end
  return g
end

-- The operator -------------------------------------------------------------------------------

local function canonical(key)
  local parts = {}
  for i = 1, #key do
    local f = key[i]
    parts[i] = type(f) == "table" and ("{" .. canonical(f) .. "}") or (type(f) .. ":" ..
      tostring(f))
  end
  return table.concat(parts, "\0")
end

local function check_result(node, r, what)
  if not triggers.valid_result[r] then
    local t = node.trigger
    error(("trigger %s%s: %s returned %s, not a trigger result (weir.CONTINUE, weir.FIRE, "
      .. "weir.PURGE or weir.FIRE_AND_PURGE)"):format(t.name,
        t.defined and (" (" .. t.defined .. ")") or "", what, tostring(r)), 0)
  end
  return r
end

M.check_result = check_result

---For the error handler (weir.run, Failures): the trigger and evictor methods of a window
---node, whose failures name the method and take the (key, window) of the trigger context,
---and the rich function's clear.
function M.user_places(job, node)
  local function add(f, what, tctx)
    if type(f) == "function" then
      local u = job.user_places[f] or {}
      job.user_places[f] = u
      u[node] = { what = what, tctx = tctx }
    end
  end
  local t = node.trigger
  local tname = ("trigger %s%s"):format(t.name, t.defined and (" (" .. t.defined .. ")") or "")
  for _, m in ipairs({ "on_element", "on_event_time", "on_processing_time", "clear",
                       "on_merge" }) do
    add(t[m], tname .. " " .. m, true)
  end
  local e = node.evictor
  if e then
    add(e.evict_before, ("evictor %s evict_before"):format(e.name), true)
    add(e.evict_after, ("evictor %s evict_after"):format(e.name), true)
  end
  if node.rich and type(node.fn) == "table" then
    add(node.fn.clear, "clear", false)
  end
  add(check_result, nil, true)
end

---weir run --check-triggers: state the trigger still holds for a window after its clear().
local function check_cleared(ctx)
  local slot = ctx.slot
  if not ctx.job.check_triggers or slot < 0 then
    return
  end
  local inst, node = ctx.inst, ctx.node
  local lua = inst.lua_state[slot]
  for name, idx in pairs(node.cell_of) do
    local left = lua and lua[name] ~= nil
    if idx then
      local v = C.weir_store_cells(inst.store, slot)[idx]
      left = left or v == v
    end
    if left then
      warn_once(ctx, "state:" .. name, ("left state %q behind after clear() of window %s "
        .. "(Flink would keep it forever)"):format(name, tostring(ctx.window)))
    end
  end
end

-- NaN keys: a Lua table cannot be indexed by NaN, so they intern under this stand-in. As in
-- Flink (Double.equals compares doubleToLongBits, which folds every NaN into one), all NaNs
-- are one key.
local NAN_KEY = {}

---The key interning of a window node: intern(inst, key) -> key id (1, 2, ...; 1 when the
---stream is not keyed), inst.keys[id] being the key. Table keys intern by their contents.
function M.interner(keyed)
  return function(inst, key)
    if not keyed then
      return 1
    end
    local k = type(key) == "table" and canonical(key) or key
    if k ~= k then
      k = NAN_KEY
    end
    local id = inst.key_ids[k]
    if not id then
      id = #inst.keys + 1
      inst.keys[id] = key
      inst.key_ids[k] = id
    end
    return id
  end
end

---The call of a node's window function on a fired window: call(inst, key, w, elements, kid),
---elements being the contents (or {result} of reduce/aggregate); outputs carry w's max
---timestamp. w may be nil when start, stop (7th, 8th arguments) say the window: one is then
---made only where the function asks for it (ctx:window(), apply).
function M.caller(node)
  local fn_kind, fn, pfn = node.fn_kind, node.user_fn, node.process_fn
  local rich, objs, emit = node.rich, node.objs, node.emit
  local cur_st, cur_ts = 0, nil
  local is_nil = util.is_nil
  local function out(x)
    if is_nil(x) then
      error("out(nil): records cannot be nil", 2)
    end
    return emit(cur_st, x, cur_ts)
  end
  return function(inst, key, w, elements, kid, start, stop)
    local st = inst.index
    if w then
      start, stop = w.start, w.stop
    end
    cur_st, cur_ts = st, stop == INF and INF or stop - 1
    local target, method = pfn, node.method
    if fn_kind == "process" or fn_kind == "apply" then
      target = fn
    end
    if target == nil then
      -- plain reduce/aggregate: the value itself
      local v = elements[1]
      if v ~= nil then
        out(v)
      end
      return
    end
    local f, obj = target, nil
    if rich then
      obj = objs[st]
      f = obj[method]
    end
    if method == "apply" then
      w = w or windows.window(start, stop)
      if obj then
        f(obj, key, w, elements, out)
      else
        f(key, w, elements, out)
      end
    else
      local ctx = inst.wctx
      ctx.win, ctx.wstart, ctx.wstop, ctx.kid, ctx.key = w or false, start, stop, kid, key
      if obj then
        f(obj, key, ctx, elements, out)
      else
        f(key, ctx, elements, out)
      end
    end
  end
end

---The per-subtask context objects of a window node's instance.
function M.contexts(job, node, inst)
  inst.tctx = setmetatable({ inst = inst, node = node, job = job, states = {}, slot = -1 },
    TriggerContext)
  inst.wctx = setmetatable({ inst = inst, node = node, job = job }, WindowContext)
end

---Wires the window node: node.push(st, v, ts, key) and node.on_watermark(inst, w).
function M.instantiate(job, node)
  local assigner, trigger, evictor = node.assigner, node.trigger, node.evictor
  local is_event_time = assigner.is_event_time
  local lateness = node.lateness
  local keyed = node.keyed
  local fn_kind, fn = node.fn_kind, node.user_fn
  local rich = node.rich
  local objs = node.objs
  local late_emit = node.late_tag and node.side[node.late_tag.id]
  node.cell_of, node.cell_count, node.late_dropped = {}, 0, 0
  local starts = {}
  -- The REPL's :draw and :late read what happened; off (nil) outside the REPL.
  local trace = job.trace
  -- With on_error, each fire, trigger call and cleanup runs guarded: a failure goes to the
  -- error side output and the rest of the timer's work goes on (API.md, Errors).
  local guard = job:fire_guard()

  local function log_late(v, ts, key, st)
    if trace then
      local log = trace.late
      log[#log + 1] = { value = v, ts = ts, key = key, operator = node.label, subtask = st,
                        watermark = node.instances[st + 1].watermark }
      if #log > 50 then
        table.remove(log, 1)
      end
    end
  end

  local function trace_element(key, ts)
    if trace then
      if key ~= key then
        key = "nan" -- a NaN cannot index the trace's table
      end
      local per = trace.elements[key]
      if not per then
        per = {}
        trace.elements[key] = per
        trace.keys[#trace.keys + 1] = key
      end
      per[#per + 1] = ts
    end
  end

  local function trace_fire(key, w, what)
    if trace then
      local f = trace.fired
      f[#f + 1] = { key = key, start = w.start, stop = w.stop, what = what }
    end
  end

  for _, inst in ipairs(node.instances) do
    inst.store = ffi.gc(C.weir_store_new(CELLS), C.weir_store_free)
    inst.timers = ffi.gc(C.weir_timers_new(), C.weir_timers_free)
    inst.key_ids, inst.keys = {}, {}
    inst.contents, inst.stamps, inst.wins, inst.wkid = {}, {}, {}, {}
    inst.lua_state, inst.wstate, inst.gstate = {}, {}, {}
    M.contexts(job, node, inst)
    inst.timer = timer_t()
    inst.msets = {}
    inst.records = 0 -- records that reached this subtask (the stall warning's "arriving")
  end
  job.timer_nodes[#job.timer_nodes + 1] = node

  local intern = M.interner(keyed)

  local function window_of(inst, slot, start, stop, kid)
    local w = inst.wins[slot]
    if not w then
      w = windows.window(start, stop)
      inst.wins[slot], inst.wkid[slot] = w, kid
    end
    return w
  end

  local call_window_fn = M.caller(node)

  local function result_of(values)
    -- reduce/aggregate over a list (evicting operator), as Flink computes them at fire time
    if fn_kind == "reduce" then
      local acc = values[1]
      for i = 2, #values do
        acc = fn(acc, values[i])
      end
      return acc
    elseif fn_kind == "aggregate" then
      local acc = fn.create()
      for i = 1, #values do
        acc = fn.add(values[i], acc)
      end
      return fn.result(acc)
    end
  end

  local function fire(inst, slot, key, kid, w)
    local c = inst.contents[slot]
    if c == nil then
      return
    end
    if trace then
      trace_fire(key, w, "fired")
    end
    if evictor then
      local values, stamps = c, inst.stamps[slot]
      local elements = evictors.elements(values, stamps)
      local ctx = inst.tctx
      if evictor.evict_before then
        evictor:evict_before(elements, #values, w, ctx)
      end
      local input = values
      if fn_kind == "reduce" or fn_kind == "aggregate" then
        input = { result_of(values) }
      end
      call_window_fn(inst, key, w, input, kid)
      if evictor.evict_after then
        evictor:evict_after(elements, #values, w, ctx)
      end
      C.weir_store_count_add(inst.store, slot, #values - C.weir_store_count(inst.store, slot))
      return
    end
    if fn_kind == "reduce" then
      call_window_fn(inst, key, w, { c }, kid)
    elseif fn_kind == "aggregate" then
      call_window_fn(inst, key, w, { fn.result(c) }, kid)
    else
      call_window_fn(inst, key, w, c, kid)
    end
  end

  local function purge(inst, slot, by_trigger)
    if by_trigger and trace and inst.contents[slot] ~= nil and inst.wins[slot] then
      trace_fire(inst.keys[inst.wkid[slot]], inst.wins[slot], "purged")
    end
    inst.contents[slot] = nil
    inst.stamps[slot] = nil
    C.weir_store_count_add(inst.store, slot, -C.weir_store_count(inst.store, slot))
  end

  local function add(inst, slot, v, ts)
    local c = inst.contents[slot]
    if evictor or fn_kind == "process" or fn_kind == "apply" then
      if c == nil then
        c = {}
        inst.contents[slot] = c
        if evictor then
          inst.stamps[slot] = {}
        end
      end
      c[#c + 1] = v
      if evictor then
        local s = inst.stamps[slot]
        s[#s + 1] = ts
      end
    elseif fn_kind == "reduce" then
      if c == nil then
        inst.contents[slot] = v
      else
        local r = fn(c, v)
        if r == nil then
          error("reduce function returned nil", 0)
        end
        inst.contents[slot] = r
      end
    else -- aggregate
      if c == nil then
        c = fn.create()
        if c == nil then
          error("aggregate: create() returned nil", 0)
        end
      end
      local r = fn.add(v, c)
      if r == nil then
        error("aggregate: add() returned nil", 0)
      end
      inst.contents[slot] = r
    end
    C.weir_store_count_add(inst.store, slot, 1)
  end

  local function register_cleanup(inst, kid, w)
    local t = cleanup_time(node, w:max_timestamp())
    if t ~= INF then
      C.weir_timers_register(inst.timers, is_event_time and EVENT or PROCESSING, t, kid,
        w.start, w.stop)
      if not is_event_time then
        job:processing_timers_changed()
      end
    end
  end

  -- A window's slot goes when the window does: contents, trigger state, window state.
  local function drop_slot(inst, kid, start, stop)
    local slot = C.weir_store_find(inst.store, kid, start, stop)
    if slot >= 0 then
      purge(inst, slot)
      inst.wins[slot], inst.wkid[slot] = nil, nil
      inst.lua_state[slot], inst.wstate[slot] = nil, nil
      C.weir_store_drop(inst.store, slot)
    end
  end

  -- Applies a trigger result to the contents in `slot`, for window w.
  local function apply_result(inst, r, slot, key, kid, w)
    if slot >= 0 then
      if r % 2 == 1 then
        if not guard then
          fire(inst, slot, key, kid, w)
        elseif not guard(fire, inst, slot, key, kid, w) and evictor then
          -- the fire failed between evictions: the count follows what is left
          local c = inst.contents[slot]
          C.weir_store_count_add(inst.store, slot, (c and #c or 0)
            - C.weir_store_count(inst.store, slot))
        end
      end
      if r >= 2 then
        purge(inst, slot, true)
      end
    end
  end

  local function late_element(st, v, ts, key)
    log_late(v, ts, key, st)
    if late_emit then
      late_emit(st, v, ts)
    else
      node.late_dropped = node.late_dropped + 1
    end
  end

  local retire -- merging windows only (below)

  -- WindowOperator.clearAllState: contents, trigger (clear), window function (clear), and for
  -- merging windows the in-flight entry. sstart/sstop is the state window (= w unless merged).
  local function clear_all(inst, key, kid, w, sstart, sstop)
    local ctx = inst.tctx
    local sslot = C.weir_store_find(inst.store, kid, sstart, sstop)
    if sslot >= 0 then
      purge(inst, sslot)
    end
    ctx.key, ctx.kid, ctx.window = key, kid, w
    ctx.slot = C.weir_store_find(inst.store, kid, w.start, w.stop)
    trigger:clear(w, ctx)
    check_cleared(ctx)
    if rich and objs[inst.index].clear then
      local wctx = inst.wctx
      wctx.win, wctx.wstart, wctx.wstop, wctx.kid, wctx.key = w, w.start, w.stop, kid, key
      objs[inst.index]:clear(wctx)
    end
    if retire then
      retire(inst, kid, w.start, w.stop)
    end
    drop_slot(inst, kid, sstart, sstop)
    drop_slot(inst, kid, w.start, w.stop)
  end

  -- The cleanup of window w at its cleanup time. Guarded, a failing clear() still drops the
  -- window: its state goes, whatever the trigger did not delete.
  local function cleanup(inst, key, kid, w, sstart, sstop)
    if not guard then
      return clear_all(inst, key, kid, w, sstart, sstop)
    end
    if not guard(clear_all, inst, key, kid, w, sstart, sstop) then
      if retire then
        retire(inst, kid, w.start, w.stop)
      end
      local sslot = C.weir_store_find(inst.store, kid, sstart, sstop)
      if sslot >= 0 then
        purge(inst, sslot)
      end
      drop_slot(inst, kid, sstart, sstop)
      drop_slot(inst, kid, w.start, w.stop)
    end
  end

  -- A call of trigger method m (on_merge, clear) during a merge: guarded, a failure is routed
  -- and the merge goes on.
  local function merge_call(m, w, ctx)
    if guard then
      guard(trigger[m], trigger, w, ctx)
    else
      trigger[m](trigger, w, ctx)
    end
  end

  -- Merging (session) windows: per key, Flink's MergingWindowSet (SEMANTICS §5.4, §5.7) as a
  -- list of in-flight windows sorted by start, each with the state window whose slot holds
  -- its contents. In-flight windows never overlap, so the windows a new one touches are a
  -- contiguous run found by binary search: O(log n) to find, plus the run's length.
  local merging = assigner.merging
  local floor = math.floor

  local function first_touching(m, start)
    local lo, hi = 1, #m + 1
    while lo < hi do
      local mid = floor((lo + hi) / 2)
      if m[mid].stop < start then
        lo = mid + 1
      else
        hi = mid
      end
    end
    return lo
  end

  local function find_entry(m, start, stop)
    local i = first_touching(m, start)
    local e = m[i]
    if e and e.start == start and e.stop == stop then
      return i, e
    end
    return nil
  end

  local function merge_contents(inst, target, source)
    local t, c = inst.contents[target], inst.contents[source]
    if c == nil then
      return
    end
    local moved = C.weir_store_count(inst.store, source)
    if t == nil then
      inst.contents[target], inst.stamps[target] = c, inst.stamps[source]
    elseif evictor or fn_kind == "process" or fn_kind == "apply" then
      for i = 1, #c do
        t[#t + 1] = c[i]
      end
      local ts, cs = inst.stamps[target], inst.stamps[source]
      if ts and cs then
        for i = 1, #cs do
          ts[#ts + 1] = cs[i]
        end
      end
    elseif fn_kind == "reduce" then
      inst.contents[target] = fn(t, c)
    else
      inst.contents[target] = fn.merge(t, c)
    end
    inst.contents[source], inst.stamps[source] = nil, nil
    C.weir_store_count_add(inst.store, source, -moved)
    C.weir_store_count_add(inst.store, target, moved)
  end

  -- The merge callback of WindowOperator: trigger.on_merge, clear the swallowed windows'
  -- triggers and cleanup timers, then merge their contents into the surviving state window.
  local function on_merge(inst, key, kid, result, merged)
    local rw = windows.window(result.start, result.stop)
    local maxts = result.stop - 1
    if is_event_time and maxts + lateness <= inst.watermark then
      error(("merging made window %s, which is already late (watermark %s)"):format(
        tostring(rw), tostring(inst.watermark)), 0)
    elseif not is_event_time and maxts <= job:now() then
      error(("merging made window %s, which has already ended"):format(tostring(rw)), 0)
    end
    local ctx = inst.tctx
    ctx.key, ctx.kid, ctx.window = key, kid, rw
    ctx.slot = C.weir_store_find(inst.store, kid, rw.start, rw.stop)
    ctx.merging = merged
    merge_call("on_merge", rw, ctx)
    ctx.merging = nil
    for i = 1, #merged do
      local m = merged[i]
      local mw = windows.window(m.start, m.stop)
      ctx.window, ctx.slot = mw, C.weir_store_find(inst.store, kid, m.start, m.stop)
      merge_call("clear", mw, ctx)
      check_cleared(ctx)
      local t = cleanup_time(node, m.stop - 1)
      if t ~= INF then
        C.weir_timers_delete(inst.timers, is_event_time and EVENT or PROCESSING, t, kid,
          m.start, m.stop)
      end
    end
    local target = C.weir_store_slot(inst.store, kid, result.sstart, result.sstop)
    for i = 1, #merged do
      local m = merged[i]
      if m.sstart ~= result.sstart or m.sstop ~= result.sstop then
        local source = C.weir_store_find(inst.store, kid, m.sstart, m.sstop)
        if source >= 0 then
          merge_contents(inst, target, source)
        end
        drop_slot(inst, kid, m.sstart, m.sstop)
      end
      if (m.start ~= result.sstart or m.stop ~= result.sstop)
          and (m.start ~= result.start or m.stop ~= result.stop) then
        drop_slot(inst, kid, m.start, m.stop)
      end
    end
    if not is_event_time then
      job:processing_timers_changed()
    end
  end

  ---MergingWindowSet.addWindow: returns the in-flight entry the new window [s, e) ends in.
  local function add_window(inst, key, kid, s, e)
    local m = inst.msets[kid]
    if not m then
      m = {}
      inst.msets[kid] = m
    end
    local i = first_touching(m, s)
    local j = i
    while j <= #m and m[j].start <= e do
      j = j + 1
    end
    if j == i then
      local entry = { start = s, stop = e, sstart = s, sstop = e }
      table.insert(m, i, entry)
      return entry
    end
    if j == i + 1 and m[i].start <= s and m[i].stop >= e then
      return m[i] -- inside an existing window: no merge
    end
    local merged = {}
    for k = i, j - 1 do
      merged[#merged + 1] = m[k]
    end
    local first = merged[1]
    local entry = { start = math.min(s, first.start), stop = math.max(e, m[j - 1].stop),
                    sstart = first.sstart, sstop = first.sstop }
    for k = j - 1, i, -1 do
      table.remove(m, k)
    end
    table.insert(m, i, entry)
    on_merge(inst, key, kid, entry, merged)
    return entry
  end

  function retire(inst, kid, start, stop) -- luacheck: ignore 111
    local m = inst.msets[kid]
    local i = m and find_entry(m, start, stop)
    if i then
      table.remove(m, i)
      if #m == 0 then
        inst.msets[kid] = nil
      end
    end
  end

  local function push_merging(st, v, ts, key)
    local inst = node.instances[st + 1]
    local kid = intern(inst, key)
    local s, e = assigner:session(v, ts, not is_event_time and job:now() or 0)
    local entry = add_window(inst, key, kid, s, e)
    if is_event_time and cleanup_time(node, entry.stop - 1) <= inst.watermark then
      retire(inst, kid, entry.start, entry.stop)
      if ts + lateness <= inst.watermark then
        late_element(st, v, ts, key)
      end
      return
    end
    local sslot = C.weir_store_slot(inst.store, kid, entry.sstart, entry.sstop)
    add(inst, sslot, v, ts)
    trace_element(key, ts)
    local aslot = C.weir_store_slot(inst.store, kid, entry.start, entry.stop)
    local w = window_of(inst, aslot, entry.start, entry.stop, kid)
    local ctx = inst.tctx
    ctx.key, ctx.kid, ctx.window, ctx.slot = key, kid, w, aslot
    local r = check_result(node, trigger:on_element(v, ts, w, ctx), "on_element")
    apply_result(inst, r, sslot, key, kid, w)
    register_cleanup(inst, kid, w)
  end

  node.push = function(st, v, ts, key)
    local inst = node.instances[st + 1]
    inst.records = inst.records + 1
    if is_event_time and (ts == nil or abs(ts) > MAX_TIME) then
      M.no_timestamp(ts)
    end
    if merging then
      return push_merging(st, v, ts, key)
    end
    local kid = intern(inst, key)
    local n = assigner:assign(ts, not is_event_time and job:now() or 0, starts)
    local W = inst.watermark
    local skipped = true
    local ctx = inst.tctx
    for i = 1, n do
      local start = starts[i]
      local stop = assigner:stop(start)
      local maxts = stop == INF and INF or stop - 1
      if not (is_event_time and cleanup_time(node, maxts) <= W) then
        skipped = false
        local slot = C.weir_store_slot(inst.store, kid, start, stop)
        add(inst, slot, v, ts)
        if trace and i == 1 then
          trace_element(key, ts)
        end
        local w = window_of(inst, slot, start, stop, kid)
        ctx.key, ctx.kid, ctx.window, ctx.slot = key, kid, w, slot
        local r = check_result(node, trigger:on_element(v, ts, w, ctx), "on_element")
        apply_result(inst, r, slot, key, kid, w)
        register_cleanup(inst, kid, w)
      end
    end
    if skipped and is_event_time and ts + lateness <= W then
      late_element(st, v, ts, key)
    end
  end

  local function timer_result(domain, t, w, ctx)
    if domain == EVENT then
      return check_result(node, trigger:on_event_time(t, w, ctx), "on_event_time")
    end
    return check_result(node, trigger:on_processing_time(t, w, ctx), "on_processing_time")
  end

  -- WindowOperator.onEventTime/onProcessingTime (SEMANTICS §5.5): the trigger first, then the
  -- cleanup when the timer is the window's cleanup time. Guarded, a failing trigger counts as
  -- CONTINUE: the window is still cleaned up at its time.
  local function on_timer(inst, domain, t, kid, start, stop)
    local sstart, sstop = start, stop
    if merging then
      local _, entry = find_entry(inst.msets[kid] or {}, start, stop)
      if not entry then
        return -- a stale timer of a window merged away or retired
      end
      sstart, sstop = entry.sstart, entry.sstop
    end
    local key = inst.keys[kid]
    local slot = C.weir_store_find(inst.store, kid, start, stop)
    local w = slot >= 0 and window_of(inst, slot, start, stop, kid)
      or windows.window(start, stop)
    local ctx = inst.tctx
    ctx.key, ctx.kid, ctx.window, ctx.slot = key, kid, w, slot
    local r
    if guard then
      local ok
      ok, r = guard(timer_result, domain, t, w, ctx)
      if not ok then
        r = 0 -- CONTINUE
      end
    else
      r = timer_result(domain, t, w, ctx)
    end
    -- contents live in the state window's slot (the trigger may have created the window's)
    local sslot = merging and C.weir_store_find(inst.store, kid, sstart, sstop) or ctx.slot
    apply_result(inst, r, sslot, key, kid, w)
    if (domain == EVENT) == is_event_time and t == cleanup_time(node, w:max_timestamp()) then
      cleanup(inst, key, kid, w, sstart, sstop)
    end
  end

  ---Fires every event-time timer at or before the new watermark w (inst.watermark is w).
  node.on_watermark = function(inst, w)
    local tm = inst.timer
    inst.firing = true
    while C.weir_timers_pop(inst.timers, EVENT, w, tm) == 1 do
      on_timer(inst, EVENT, tm.time_ms, tm.key, tm.start, tm.stop)
    end
    inst.firing = false
  end

  ---Fires every processing-time timer at or before time t. With as_if_due (weir's end of
  ---input), the clock reads each timer's time + 1 while it fires, as if its time had come.
  node.on_processing_time = function(inst, t, as_if_due)
    local tm = inst.timer
    while C.weir_timers_pop(inst.timers, PROCESSING, t, tm) == 1 do
      if as_if_due then
        job.now_override = tm.time_ms + 1
      end
      on_timer(inst, PROCESSING, tm.time_ms, tm.key, tm.start, tm.stop)
    end
    job.now_override = nil
  end

  -- for the error handler (weir.run, Failures): where a fire is, from these frames' arguments
  job.firers[node.on_watermark] = { node = node }
  job.firers[node.on_processing_time] = { node = node, processing = true }
  job.places[call_window_fn] = { node = node, key = 2, win = 3, start = 6, stop = 7 }
  job.places[fire] = { node = node, key = 3, win = 5 }
  job.places[clear_all] = { node = node, key = 2, win = 4 }
  job.places[on_merge] = { node = node, key = 2, range = 4 }
  job.places[on_timer] = { node = node, kid = 4, start = 5, stop = 6 }
  job.pushes[push_merging] = node -- node.push tail-calls it: its frame replaces the push's
  M.user_places(job, node)
end

-- The face's interface (weir.windowing) ------------------------------------------------------

function M.stats(_, inst)
  local store, timers = inst.store, inst.timers
  return {
    open_windows = C.weir_store_stat(store, C.WEIR_STORE_OPEN),
    elements = C.weir_store_stat(store, C.WEIR_STORE_ELEMENTS),
    store_bytes = C.weir_store_stat(store, C.WEIR_STORE_BYTES),
    event_timers = C.weir_timers_count(timers, EVENT),
    processing_timers = C.weir_timers_count(timers, PROCESSING),
    next_event_timer = C.weir_timers_next(timers, EVENT),
    next_processing_timer = C.weir_timers_next(timers, PROCESSING),
  }
end

function M.windows(_, inst)
  local list = {}
  for slot, w in pairs(inst.wins) do
    list[#list + 1] = { window = w, key = inst.keys[inst.wkid[slot]],
                        elements = C.weir_store_count(inst.store, slot),
                        waits_for = w:max_timestamp() }
  end
  return list
end

function M.next_processing_time(_, inst)
  return C.weir_timers_next(inst.timers, PROCESSING)
end

function M.key_of(_, inst, kid)
  return inst.keys[kid]
end

return M
