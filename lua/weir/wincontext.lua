-- weir.wincontext: what both window operators (weir.windowop, weir.aggwindow) share: the
-- trigger, window and state contexts a user function sees, key interning, the window-function
-- call, and the rules written once: cleanup time, the no-timestamp check, late records, the
-- reduce/aggregate result checks, the trigger-result check, --check-triggers warnings, the
-- error handler's places, and the REPL's trace. Only the operators require it.
local ffi = require("ffi")
local C = require("weir.ffi")
local windows = require("weir.windows")
local triggers = require("weir.triggers")
local util = require("weir.util")
local duration = require("weir.duration")
local keys = require("weir.keys")

local M = {}

local INF = math.huge
local MAX_EXACT = duration.MAX_EXACT
local EVENT, PROCESSING = tonumber(C.WEIR_TIME_EVENT), tonumber(C.WEIR_TIME_PROCESSING)
M.CELLS = 4 -- numeric trigger state cells per window in the general operator's store
local CELLS = M.CELLS

---A window's cleanup time (WindowOperator.cleanupTime): its max timestamp, plus the allowed
---lateness in event time; +inf when that passes the end of time.
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
M.cleanup_time = cleanup_time

---The same rule as a closure of maxts for an event-time node (for the per-element functions:
---the lateness is an upvalue).
function M.cleanup_of(node)
  local lateness = node.lateness
  return function(maxts)
    local t = maxts + lateness
    return t >= 9.2e18 and INF or t
  end
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
M.cell_index = cell_index -- a checkpoint's restore gives trigger state its cell (weir.winckpt)

-- The state lives where the operator's state module (ctx.home, weir.winstate) keeps it.
function State:get()
  local ctx = self.ctx
  local slot = ctx.slot
  if slot < 0 then
    return nil
  end
  return ctx.home.state_get(ctx.inst, slot, self.name, self.idx)
end

function State:set(v)
  if v == nil then
    return self:clear()
  end
  local ctx = self.ctx
  ctx.home.state_set(ctx.inst, ctx:ensure_slot(), self.name, self.idx, v)
end

function State:clear()
  local ctx = self.ctx
  local slot = ctx.slot
  if slot >= 0 then
    ctx.home.state_clear(ctx.inst, slot, self.name, self.idx)
  end
end

-- The trigger context: one per subtask, pointed at the current (key, window) before each call.
local TriggerContext = {}
TriggerContext.__index = TriggerContext

function TriggerContext:current_watermark()
  local inst = self.inst
  local w = inst.watermark
  if inst.floor_top > w then -- a restore at another parallelism: the key's group's floor
    return M.floor_of(self.node, inst, self.key, w)
  end
  return w
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
  C.weir_out_flush() -- stdout first, and the --progress line erased
  io.stderr:write(("weir: warning: %s: trigger %s%s: %s\n"):format(node.label,
    node.trigger.name, node.trigger.defined and (" (" .. node.trigger.defined .. ")") or "",
    text))
end
M.warn_once = warn_once

-- The general operator keeps per slot the timers known to be registered (weir.winstate: tke,
-- tkp, tkc): registering one again is a no-op in Flink's timer service (a set), so it is a
-- table check here. The fast operator's subtasks have none (inst.tke is nil).
local function cleanup_domain(ctx)
  return ctx.node.assigner.is_event_time and EVENT or PROCESSING
end

function TriggerContext:register_event_time_timer(t)
  local inst, slot = self.inst, self.slot
  local known = inst.tke
  if known and slot >= 0 and t ~= nil and known[slot] == t and not self.job.check_triggers then
    return
  end
  check_time(self, t, "register_event_time_timer")
  if self.job.check_triggers and t <= inst.watermark then
    warn_once(self, "behind", ("registered an event-time timer at %s, already behind the "
      .. "watermark %s: it fires only %s"):format(tostring(t), tostring(inst.watermark),
      inst.firing and "because timers are firing now" or "with the next watermark"))
  end
  local w = self.window
  if C.weir_timers_register(inst.timers, EVENT, t, self.kid, w.start, w.stop) >= 0
      and known and slot >= 0 then
    known[slot] = t
  end
end

function TriggerContext:delete_event_time_timer(t)
  check_time(self, t, "delete_event_time_timer")
  local w, inst, slot = self.window, self.inst, self.slot
  C.weir_timers_delete(inst.timers, EVENT, t, self.kid, w.start, w.stop)
  if inst.tke and slot >= 0 then
    self.home.timer_gone(inst, slot, EVENT, t, cleanup_domain(self))
  end
end

function TriggerContext:register_processing_time_timer(t)
  local inst, slot = self.inst, self.slot
  local known = inst.tkp
  if known and slot >= 0 and t ~= nil and known[slot] == t then
    return
  end
  check_time(self, t, "register_processing_time_timer")
  local w = self.window
  if C.weir_timers_register(inst.timers, PROCESSING, t, self.kid, w.start, w.stop) >= 0
      and known and slot >= 0 then
    known[slot] = t
  end
  self.job:processing_timers_changed()
end

function TriggerContext:delete_processing_time_timer(t)
  check_time(self, t, "delete_processing_time_timer")
  local w, inst, slot = self.window, self.inst, self.slot
  C.weir_timers_delete(inst.timers, PROCESSING, t, self.kid, w.start, w.stop)
  if inst.tkp and slot >= 0 then
    self.home.timer_gone(inst, slot, PROCESSING, t, cleanup_domain(self))
  end
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
    self.slot = self.home.open(self.inst, self.kid, w.start, w.stop)
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
  return self.home.window_state(self.inst, self.kid, self.wstart, self.wstop)
end

function WindowContext:global_state()
  return self.home.global_state(self.inst, self.kid)
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
function M.check_cleared(ctx)
  local slot = ctx.slot
  if not ctx.job.check_triggers or slot < 0 then
    return
  end
  local left = ctx.home.trigger_state(ctx.node, ctx.inst, slot) or {}
  for name in pairs(ctx.node.cell_of) do
    if left[name] ~= nil then
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
  -- weir.aggregates without a window function: the window's record, made here (per fire)
  local builtin_out = node.builtin_out
  local window_result = builtin_out and require("weir.aggregates").window_result
  return function(inst, key, w, elements, kid, start, stop)
    local st = inst.index
    if w then
      start, stop = w.start, w.stop
    end
    cur_st, cur_ts = st, stop == INF and INF or stop - 1
    if builtin_out then
      local v = elements[1]
      if type(key) == "number" then
        return emit(st, ffi.new(window_result, key, start, stop, v), cur_ts)
      end
      return emit(st, { key = key, start = start, stop = stop, value = v }, cur_ts)
    end
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

---The per-subtask context objects of a window node's instance; home is the operator's state
---module (weir.winstate, weir.aggstate), where trigger state, window_state() and
---global_state() live.
function M.contexts(job, node, inst, home)
  inst.tctx = setmetatable({ inst = inst, node = node, job = job, states = {}, slot = -1,
                             home = home }, TriggerContext)
  inst.wctx = setmetatable({ inst = inst, node = node, job = job, home = home }, WindowContext)
  inst.floors, inst.floor_top = false, -INF -- lateness floors (M.floor_of): none
end

-- Lateness floors. After a restore at another parallelism a subtask's watermark is the minimum
-- of the old subtasks' it inherits (weir.checkpoint_parts), lower than the watermark the old
-- subtask owning a key group had: a record that subtask would have found late could re-create
-- a window it had fired and purged. So the subtask keeps, per key group whose old watermark
-- (its floor) is above its own, that floor (inst.floors: key group -> floor; inst.floor_top:
-- the highest, -inf when none; weir.winckpt.restore_floors sets them), and a record of such a
-- group is late, and its windows due, against max(watermark, floor). The per-element functions
-- test `inst.floor_top > W` only (one branch); the floors go once the watermark passes the
-- highest (M.pass_floors, from on_watermark).

---The watermark a record of key meets in subtask inst while floors are active: its key
---group's floor when that is above w (the subtask's watermark), else w. The key group as the
---hash exchange computes it (weir.codegen).
function M.floor_of(node, inst, key, w)
  local floors = inst.floors
  if not floors then
    return w
  end
  local maxp, tk = node.max_parallelism, type(key)
  local kg
  if tk == "string" then
    kg = C.weir_keygroup_of_string(key, #key, maxp)
  elseif tk == "number" then
    kg = C.weir_keygroup_of_number(key, maxp)
  else
    local h, why = keys.java_hash(key)
    if not h then
      keys.bad_key(key, why)
    end
    kg = C.weir_keygroup_of(h, maxp)
  end
  local f = floors[tonumber(kg)]
  if f ~= nil and f > w then
    return f
  end
  return w
end

---Drops subtask inst's floors once its watermark w has passed the highest.
function M.pass_floors(inst, w)
  if w >= inst.floor_top then
    inst.floors, inst.floor_top = false, -INF
  end
end

---What both operators set on a window node before wiring it: its trigger state cells (general
---operator), the late-record count and side output, and the REPL's trace (nil outside it).
function M.setup(job, node)
  node.cell_of, node.cell_count, node.late_dropped = {}, 0, 0
  node.first_late = false -- the first dropped late record, named when the job ends (run.lua)
  node.late_emit = node.late_tag and node.side[node.late_tag.id]
  node.trace = job.trace
end

-- The rules both operators follow ------------------------------------------------------------

---The result checks of reduce and aggregate, for the per-element functions' failing branch.
function M.reduce_nil()
  error("reduce function returned nil", 0)
end

function M.aggregate_nil(what)
  error(("aggregate: %s() returned nil"):format(what), 0)
end

-- The REPL's trace (:late, :draw): what happened, off (nil) outside the REPL.
local TRACE_LATE = 50

---A late record of subtask st: into the trace's late log (the last TRACE_LATE).
-- The watermark record key of subtask st was late against (its key group's floor, M.floor_of,
-- when that is above the subtask's watermark).
local function late_against(node, st, key)
  local inst = node.instances[st + 1]
  local w = inst.watermark
  if inst.floor_top > w then
    return M.floor_of(node, inst, key, w)
  end
  return w
end

function M.trace_late(node, st, v, ts, key)
  local log = node.trace.late
  log[#log + 1] = { value = v, ts = ts, key = key, operator = node.label, subtask = st,
                    watermark = late_against(node, st, key) }
  if #log > TRACE_LATE then
    table.remove(log, 1)
  end
end

---An element that reached a window (not late): its time (event time, or processing time in a
---processing-time window), per key.
function M.trace_element(trace, key, ts)
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

---A window of node that fired or was purged by its trigger (what: "fired" or "purged").
function M.trace_fire(trace, key, start, stop, what, node)
  local f = trace.fired
  f[#f + 1] = { key = key, start = start, stop = stop, what = what, node = node }
end

---A record whose every window is late (SEMANTICS §5.6): to the late side output, or counted as
---dropped; traced in the REPL.
function M.late(node, st, v, ts, key)
  if node.trace then
    M.trace_late(node, st, v, ts, key)
  end
  local e = node.late_emit
  if e then
    e(st, v, ts)
  else
    node.late_dropped = node.late_dropped + 1
    if not node.first_late then
      node.first_late = { value = v, ts = ts, key = key, subtask = st,
                          watermark = late_against(node, st, key) }
    end
  end
end

return M
