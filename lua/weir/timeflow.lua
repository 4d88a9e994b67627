-- weir.timeflow: how time moves through a job. Owns watermark and idleness propagation through
-- the valves (forward_watermark, forward_status), the timestamps operator (generators and
-- emitters per subtask, the idle-advance quiet guard), periodic ticks, a source's final
-- watermark, and the registry of processing-time timers: the earliest due time over every
-- window subtask, kept per subtask and refreshed only for the subtasks whose timers changed,
-- from which the runtime's single wakeup is set once per batch. Methods of the job (weir.run
-- mixes them into Job).
local bit = require("bit")
local C = require("weir.ffi")
local watermarks = require("weir.watermarks")
local duration = require("weir.duration")
local status = require("weir.status")
local windowing = require("weir.windowing")
local codegen = require("weir.codegen")

local M = {}
local Job = {}
M.methods = Job

local INF = math.huge
local END_EXHAUSTED = tonumber(C.WEIR_END_EXHAUSTED)

-- Watermarks and idleness ------------------------------------------------------------------
-- Watermarks and statuses are broadcast to every consumer subtask (subtask 0 first), each
-- through that subtask's valve; an operator whose valve output advances first fires its
-- event-time timers (on_watermark), then forwards the new watermark. Assigners replace what
-- comes from upstream (SEMANTICS §1.3): they forward nothing themselves.

local forward_watermark, forward_status
local OP_SLOT = C.weir_op_slot()
-- resolved now: the first lookup of a C function inside a trace aborts it ("symbol not in cache")
local _, _, _ = C.weir_valve_output, C.weir_valve_is_idle, C.weir_rt_now
local _, _, _, _ = C.weir_valve_watermark, C.weir_valve_status, C.weir_rt_set_wakeup,
  C.weir_source_pending

local function on_valve(d, flags)
  local node = d.node
  if bit.band(flags, 1) ~= 0 then
    local w = C.weir_valve_output(d.valve)
    d.watermark = w
    local hook = node.on_watermark
    if hook then
      OP_SLOT[0] = node.id -- event-time timers fire user code
      hook(d, w)
    end
    if not node.assigner_op then
      forward_watermark(d, w)
    end
  end
  if bit.band(flags, 2) ~= 0 and not node.assigner_op then
    forward_status(d, C.weir_valve_is_idle(d.valve) == 1)
  end
end

-- One or two consumer subtasks get their watermark or status straight-line, more in a loop: an
-- operator has a few consumer subtasks (its parallelism's), so a loop over them was a loop of
-- one or two trips per watermark, which a root trace through it aborted on ("inner loop in root
-- trace"; see codegen.sweep). The calls are written out, not made through a helper, and each
-- case returns right after its last one: a helper's frame, or a test after the call, made the
-- window fires' side traces below it fail to match their parent's registers ("NYI: register
-- coalescing too complex": over the abort matrix, windowop's aborts went from about 280 to
-- 780 per run).
function forward_watermark(inst, w)
  local targets = inst.wm_targets
  local n = #targets
  if n == 1 then
    local t = targets[1]
    local flags = C.weir_valve_watermark(t[1].valve, t[2], w)
    if flags > 0 then
      on_valve(t[1], flags)
    end
    return
  elseif n == 2 then
    local t = targets[1]
    local flags = C.weir_valve_watermark(t[1].valve, t[2], w)
    if flags > 0 then
      on_valve(t[1], flags)
    end
    t = targets[2]
    flags = C.weir_valve_watermark(t[1].valve, t[2], w)
    if flags > 0 then
      on_valve(t[1], flags)
    end
    return
  end
  for i = 1, n do
    local t = targets[i]
    local flags = C.weir_valve_watermark(t[1].valve, t[2], w)
    if flags > 0 then
      on_valve(t[1], flags)
    end
  end
end

function forward_status(inst, idle)
  local targets = inst.wm_targets
  local n, v = #targets, idle and 1 or 0
  if n == 1 then
    local t = targets[1]
    local flags = C.weir_valve_status(t[1].valve, t[2], v)
    if flags > 0 then
      on_valve(t[1], flags)
    end
    return
  elseif n == 2 then
    local t = targets[1]
    local flags = C.weir_valve_status(t[1].valve, t[2], v)
    if flags > 0 then
      on_valve(t[1], flags)
    end
    t = targets[2]
    flags = C.weir_valve_status(t[1].valve, t[2], v)
    if flags > 0 then
      on_valve(t[1], flags)
    end
    return
  end
  for i = 1, n do
    local t = targets[i]
    local flags = C.weir_valve_status(t[1].valve, t[2], v)
    if flags > 0 then
      on_valve(t[1], flags)
    end
  end
end
M.forward_watermark, M.forward_status = forward_watermark, forward_status

---A source ended: when it was exhausted (not stopped), its final watermark, +inf, goes down.
---A source that announced IDLE (a Kafka source whose partitions all finished and were released
---before its end came) becomes ACTIVE first: a valve ignores a watermark on an idle channel,
---and +inf must reach every operator (SEMANTICS §12: an idle channel that sends MAX first
---becomes ACTIVE, as Flink's WatermarkToDataOutput marks its output active before a watermark).
function Job:source_ended(src, flags)
  self.live = self.live - 1
  if flags == END_EXHAUSTED and not self.stopped then
    local inst = self.by_source[src].instances[1]
    inst.watermark = INF
    forward_status(inst, false)
    forward_watermark(inst, INF)
  end
end

-- The timestamps operator ------------------------------------------------------------------

local function bad_ts(t)
  error(("the timestamp assigner returned %s, %s"):format(duration.show(t),
    duration.time_problem(t, duration.MAX_TIME, "2^52")), 0)
end

---The assign_timestamps_and_watermarks operator: a generator and an emitter per subtask. The
---idle-advance guard (API.md, with_idle_advance) holds while any source feeding it has input
---waiting; weir.env{_quiet_guard = false} (internal: tests/cli/backpressure.sh) turns it off.
function Job:instantiate_timestamps(node)
  local strategy = node.strategy
  node.assigner_op = true
  node.gens, node.emitters = {}, {}
  local sources = self:feeding_sources(node)
  local no_guard = self.plan.env.quiet_guard == false
  local genv = {
    now = function() return self:now() end,
    arrival = function() return self.arrival end,
    quiet = function()
      if no_guard then
        return true
      end
      if node.align_member and node.align_member.paused then
        return false -- held by watermark alignment: its input waits (weir.alignment)
      end
      for _, src in ipairs(sources) do
        if C.weir_source_pending(self.rt, src.src_id) ~= 0 then
          return false
        end
      end
      return true
    end,
    paused = function() return node.align_member and node.align_member.paused or false end,
  }
  for _, inst in ipairs(node.instances) do
    local st = inst.index
    node.gens[st] = watermarks.generator(strategy, genv)
    node.emitters[st] = watermarks.emitter(function(w)
      inst.watermark = w
      forward_watermark(inst, w)
    end, function(idle)
      forward_status(inst, idle)
    end)
  end
  node.push = self:generate(node, "timestamps", false, strategy.assigner, node.gens,
    node.emitters, node.emit, bad_ts, duration.MAX_TIME)
  -- upstream watermarks are ignored, except the end of input (SEMANTICS §1.3)
  node.on_watermark = function(inst, w)
    if w == INF then
      node.emitters[inst.index]:emit_watermark(INF)
    end
  end
  self.assigners[#self.assigners + 1] = node
end

---The source nodes upstream of a node (through every input), in declaration order.
function Job.feeding_sources(_, node)
  local seen, out = {}, {}
  local function walk(n)
    if seen[n] then
      return
    end
    seen[n] = true
    if n.kind == "source" then
      out[#out + 1] = n
    end
    for _, p in ipairs(n.inputs) do
      walk(p.node)
    end
  end
  walk(node)
  table.sort(out, function(a, b) return a.id < b.id end)
  return out
end

---A periodic tick: every generator's on_periodic_emit, in operator order, subtask 0 first.
function Job:tick()
  self.sweep_tick()
  if self.stall_ms > 0 then
    self.sweep_stalls(self, self:now(), self.stall_ms)
  end
end

-- Processing-time timers -------------------------------------------------------------------
-- The runtime has one wakeup (weir_rt_set_wakeup), read only when weir polls; the registry
-- (job.ptimers) keeps each window subtask's earliest processing-time timer and the minimum
-- over them. A change marks its subtask (or, without one, every subtask) stale: nothing is read
-- from C then. Before the next poll (Job:handle) the stale subtasks are read once each and the
-- wakeup is set if the earliest time moved: a batch that registers a timer per record costs
-- one read per changed subtask, not a scan of every subtask per registration.

---The earliest pending processing-time timer of one window subtask (+inf: none).
local function next_processing_timer(inst)
  return windowing.next_processing_time(inst.node, inst)
end

local function new_registry()
  return { due = {}, stale = {}, n_stale = 0, all = false, earliest = INF }
end
M.new_registry = new_registry

---A window subtask's processing-time timers changed (registered, deleted or fired); without
---inst, any subtask's may have. Cheap: the timers are read before the next poll.
function Job:processing_timers_changed(inst)
  local r = self.ptimers
  if inst == nil then
    r.all = true
  elseif not r.stale[inst] then
    r.stale[inst] = true
    r.n_stale = r.n_stale + 1
    r.stale[r.n_stale] = inst
  end
end

-- One subtask's earliest timer into r.due; returns the lowest time read so far and whether
-- the subtask that held the minimum holds it no longer. Not a closure in refresh: refresh runs
-- before every poll, and LuaJIT cannot compile a closure's creation (a trace abort per batch).
local function read_due(r, inst, earliest, lowered, raised)
  local due = r.due
  local old, t = due[inst] or INF, next_processing_timer(inst)
  due[inst] = t
  if t < lowered then
    lowered = t
  end
  if old == earliest and t > old then
    raised = true
  end
  return lowered, raised
end

-- Reads the stale subtasks' earliest timers and updates the minimum.
local function refresh(self, r)
  local due, lowered, raised = r.due, INF, false
  local earliest = r.earliest
  if r.all then
    lowered, raised = self.sweep_read_all(r, earliest)
  else
    local stale = r.stale
    if r.n_stale == 1 then -- the usual batch: no loop (see codegen.sweep)
      lowered, raised = read_due(r, stale[1], earliest, lowered, raised)
    else
      for i = 1, r.n_stale do
        lowered, raised = read_due(r, stale[i], earliest, lowered, raised)
      end
    end
  end
  local stale, n = r.stale, r.n_stale
  if n == 1 then
    stale[stale[1]], stale[1] = nil, nil
  elseif n > 1 then
    for i = 1, n do
      stale[stale[i]], stale[i] = nil, nil
    end
  end
  r.n_stale, r.all = 0, false
  if raised then
    earliest = self.sweep_min_due(due)
  elseif lowered < earliest then
    earliest = lowered
  end
  r.earliest = earliest
end

local function tick_loop(entries)
  return function()
    for i = 1, #entries do
      local e = entries[i]
      e[1]:on_periodic_emit(e[2])
    end
  end
end

local function stalls_loop(entries, check)
  return function(job, now, after)
    for i = 1, #entries do
      local e = entries[i]
      check(job, e[1], e[2], now, after)
    end
  end
end

local function fire_loop(entries, slot)
  return function(upto, as_if_due)
    for i = 1, #entries do
      local e = entries[i]
      slot[0] = e[1]
      e[2].on_processing_time(e[3], upto, as_if_due)
    end
  end
end

local function min_due_loop(entries)
  return function(due)
    local m = INF
    for i = 1, #entries do
      local t = due[entries[i]]
      if t and t < m then
        m = t
      end
    end
    return m
  end
end

local function read_all_loop(entries)
  return function(r, earliest)
    local lowered, raised = INF, false
    for i = 1, #entries do
      lowered, raised = read_due(r, entries[i], earliest, lowered, raised)
    end
    return lowered, raised
  end
end

---After every operator is instantiated: the sweeps of a tick (every generator, then the stall
---check of every event-time window subtask), of a processing-time fire and of the timer
---registry's refresh and minimum over every window subtask (codegen.sweep: straight-line
---code, a loop past codegen.SWEEP_MAX entries).
function Job:make_sweeps()
  local gens, stalls, fires, insts = {}, {}, {}, {}
  for _, node in ipairs(self.assigners or {}) do
    for st = 0, node.parallelism - 1 do
      gens[#gens + 1] = { node.gens[st], node.emitters[st] }
    end
  end
  for _, node in ipairs(self.timer_nodes) do
    for _, inst in ipairs(node.instances) do
      if node.assigner and node.assigner.is_event_time then
        stalls[#stalls + 1] = { node, inst }
      end
      fires[#fires + 1] = { node.id, node, inst }
      insts[#insts + 1] = inst
    end
  end
  local env = { check = status.check_stall, slot = self.op_slot, read_due = read_due }
  local small = codegen.SWEEP_MAX
  self.sweep_tick = #gens > small and tick_loop(gens)
    or codegen.sweep("tick", gens, "", "E[1]:on_periodic_emit(E[2])", env, {})
  self.sweep_stalls = #stalls > small and stalls_loop(stalls, status.check_stall)
    or codegen.sweep("stalls", stalls, "job, now, after", "check(job, E[1], E[2], now, after)",
      env, { "check" })
  self.sweep_fire = #fires > small and fire_loop(fires, self.op_slot)
    or codegen.sweep("processing timers", fires, "upto, as_if_due",
      "slot[0] = E[1]; E[2].on_processing_time(E[3], upto, as_if_due)", env, { "slot" })
  self.sweep_read_all = #insts > small and read_all_loop(insts)
    or codegen.sweep("timer registry", insts, "r, earliest", "lowered, raised = "
      .. "read_due(r, E, earliest, lowered, raised)", env, { "read_due" },
      "  local lowered, raised = 1 / 0, false", "  return lowered, raised")
  self.sweep_min_due = #insts > small and min_due_loop(insts)
    or codegen.sweep("timer minimum", insts, "due", "local t = due[E]; if t and t < m then "
      .. "m = t end", env, {}, "  local m = 1 / 0", "  return m")
end

---The earliest pending processing-time timer of any window operator (+inf: none).
function Job:next_processing_time()
  local r = self.ptimers
  if r.all or r.n_stale > 0 then
    refresh(self, r)
  end
  return r.earliest
end

---Re-arms the runtime's wakeup for the earliest processing-time timer, if it moved (before a
---poll: the runtime reads the wakeup only there).
function Job:sync_wakeup()
  local due = self:next_processing_time()
  if due ~= self.wakeup and self.rt ~= nil then
    self.wakeup = due
    C.weir_rt_set_wakeup(self.rt, due)
  end
end

---Fires every processing-time timer due at upto (the clock reads T+1 while the timer for T
---fires), operator by operator, subtask 0 first. With as_if_due (weir's end of input) the
---clock reads each timer's time + 1 while it fires.
function Job:fire_processing_timers(upto, as_if_due)
  self.wakeup = nil -- the runtime cleared it when it delivered the TIMER event
  self.sweep_fire(upto, as_if_due)
  self:processing_timers_changed()
end

---After the last source: weir's default fires every pending processing-time timer, in time
---order, after the final watermark; end_of_input = "flink" drops them as Flink does.
function Job:end_of_input()
  if self.stopped or self.plan.env.end_of_input == "flink" then
    return
  end
  -- A timer that firing registers fires too if it is not later than the last one pending now;
  -- a later one is dropped: a trigger that registers the next timer at each fire
  -- (continuous_processing_time) would otherwise never let the job end.
  local horizon = -INF
  for _, node in ipairs(self.timer_nodes) do
    for _, inst in ipairs(node.instances) do
      horizon = math.max(horizon, windowing.last_processing_time(node, inst))
    end
  end
  self.ending = true
  local ok, info = self:protected(function()
    -- in global time order: everything due at the earliest pending time, then the next
    while true do
      local due = self:next_processing_time()
      if due == INF or due > horizon then
        break
      end
      self:fire_processing_timers(due, true)
    end
  end)
  if not ok then
    if C.weir_mem_alarm() ~= 0 then
      self:release_reserve(info)
      self:check_memory(info)
    end
    self:failed(info, true)
  end
end


-- set-up code, never traced (weir.codegen, "Set-up code"); the closures it makes are
jit.off(true) -- this chunk too: its loops run once
for _, f in ipairs({ Job.instantiate_timestamps, Job.make_sweeps }) do
  jit.off(f)
end
jit.off(Job.feeding_sources, true) -- and its walk: a shared hot counter started traces there
-- and the end of input's loop over the due times (once per job: a shared hot counter made it
-- start a trace now and then that left it, "leaving loop in root trace"); the fires it calls
-- compile
jit.off(Job.end_of_input, true)
-- and a source's end (once per source: a shared hot counter started a trace there now and then,
-- which then unrolled forward_watermark's recursion down the operator chain, "call unroll limit
-- reached")
jit.off(Job.source_ended)

return M
