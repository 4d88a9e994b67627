-- weir.interval: the interval join, Flink's IntervalJoinOperator. Two keyed inputs; per key two
-- map states, "left_buffer" and "right_buffer", from a timestamp to the records of that
-- timestamp (in arrival order). A record joins every buffered record of the other side whose
-- timestamp lies in [ts + lo, ts + hi] (the right side: [ts - hi, ts - lo]), matched buckets in
-- ascending timestamp order; each pair carries max(left ts, right ts). A cleanup timer per
-- (key, side, time) drops a bucket once the watermark passes the last time it can still join
-- (Flink's cleanup time). A record whose timestamp is below the operator's watermark is late:
-- it goes to side_output_left/right_late_data, or is dropped and counted. The operator is a
-- keyed one (weir.keyed: node.states/state_list, inst.kstate, the timers, the operator
-- interface), so what covers keyed state covers its buffers and timers.
local C = require("weir.ffi")
local util = require("weir.util")
local codegen = require("weir.codegen")
local keyed = require("weir.keyed")
local wc = require("weir.wincontext")

local M = {}

local EVENT = tonumber(C.WEIR_TIME_EVENT)
local LEFT, RIGHT = 1, 2

-- The push of one side. Upvalues: the user's function, the subtasks, the interner, the state
-- names (ours, other), the side's relative bounds, whether it is the left side, the side id
-- of its cleanup timers, and the late and no-timestamp handlers.
codegen.add_templates({ interval_join = [[
local f, objs, insts, intern, C, emit, is_nil, OURS, OTHER, rlo, rhi, left, SIDE, EVENT, late,
  no_ts = ...
local next = next
local cur_st, cur_ts = 0, nil
local function out(x)
  if is_nil(x) then error("out(nil): records cannot be nil", 2) end
  emit(cur_st, x, cur_ts)
  OP_[0] = OPID_ -- the user function runs on
end
-- the pairs of v (at ts) with the records b of the other side's timestamp t
local function pairs_with(st, inst, v, ts, t, b)
  local out_ts = t > ts and t or ts
  cur_st, cur_ts = st, out_ts
  local ctx = inst.ij_ctx
  ctx.ts = out_ts
  if left then
    ctx.left_ts, ctx.right_ts = ts, t
    CALL(v, b[1], ctx, out)
    for j = 2, #b do
      CALL(v, b[j], ctx, out)
    end
  else
    ctx.left_ts, ctx.right_ts = t, ts
    CALL(b[1], v, ctx, out)
    for j = 2, #b do
      CALL(b[j], v, ctx, out)
    end
  end
end
-- three or more buffered timestamps: those in [lo, hi], sorted, then their pairs
local function many(st, inst, v, ts, tbl, lo, hi)
  local found, n = inst.ij_found, 0
  for t in next, tbl do
    if t >= lo and t <= hi then
      n = n + 1
      local i = n
      while i > 1 and found[i - 1] > t do
        found[i] = found[i - 1]
        i = i - 1
      end
      found[i] = t
    end
  end
  for i = 1, n do
    local t = found[i]
    pairs_with(st, inst, v, ts, t, tbl[t])
  end
end
return function(st, v, ts, key)
  if ts == nil then no_ts() end
  local inst = insts[st]
  if ts < inst.watermark then
    late(st, v, ts, key)
    return
  end
  local kid = intern(inst, key)
  inst.kid = kid
  inst.row[0] = C.weir_kstate_row(inst.kstate, kid)
  local handles = inst.handles
  local ours = handles[OURS]
  local bucket = ours:get(ts)
  if bucket == nil then
    ours:put(ts, { v })
  else
    bucket[#bucket + 1] = v
  end
  local lo, hi = ts + rlo, ts + rhi
  -- the other side's buffer; one or two timestamps (the usual case) without a loop: a loop of
  -- a few trips per record is one LuaJIT can neither compile nor leave
  local _, tbl = handles[OTHER]:pairs()
  local t1, b1 = next(tbl)
  if t1 ~= nil then
    local t2, b2 = next(tbl, t1)
    if t2 == nil then
      if t1 >= lo and t1 <= hi then pairs_with(st, inst, v, ts, t1, b1) end
    elseif next(tbl, t2) == nil then
      if t2 < t1 then
        t1, b1, t2, b2 = t2, b2, t1, b1
      end
      if t1 >= lo and t1 <= hi then pairs_with(st, inst, v, ts, t1, b1) end
      if t2 >= lo and t2 <= hi then pairs_with(st, inst, v, ts, t2, b2) end
    else
      many(st, inst, v, ts, tbl, lo, hi)
    end
  end
  C.weir_timers_register(inst.timers, EVENT, rhi > 0 and ts + rhi or ts, kid, SIDE, 0)
end]] })

-- What the join function sees as ctx (Flink's ProcessJoinFunction.Context).
local Context = {}
Context.__index = Context
function Context:left_timestamp() return self.left_ts end
function Context:right_timestamp() return self.right_ts end
function Context:timestamp() return self.ts end
function Context:current_watermark() return self.inst.watermark end
function Context:output(t, v)
  if type(t) ~= "table" or not t.id then
    error("ctx:output: expected an output tag", 2)
  end
  if util.is_nil(v) then
    error("ctx:output: cannot emit nil", 2)
  end
  local e = self.node.side[t.id]
  if e then
    e(self.inst.index, v, self.ts)
    self.job.op_slot[0] = self.node.id
  end
end

local function no_ts()
  error("interval_join: the record has no timestamp (an interval join runs in event time: "
    .. "assign_timestamps_and_watermarks on both inputs)", 0)
end

---Wires an interval_join node (weir.run): a keyed operator whose inputs push into the two
---buffers, and whose watermark pops the cleanup timers.
function M.instantiate(job, node)
  node.window_op = keyed
  node.states, node.state_list = node.states or {}, node.state_list or {}
  node.late_dropped, node.first_late, node.keyed = 0, false, true
  node.late_hint = "side_output_left_late_data or side_output_right_late_data" -- jobreport
  for _, inst in ipairs(node.instances) do
    keyed.init(job, node, inst)
    inst.ij_found = {}
    inst.ij_ctx = setmetatable({ inst = inst, node = node, job = job, ts = 0, left_ts = 0,
                                 right_ts = 0 }, Context)
  end
  -- the two buffers: map states made as open() makes them (weir.keyed_state), before records
  for _, inst in ipairs(node.instances) do
    local rt = keyed.open_context(inst, {}, job)
    rt:map_state("left_buffer")
    rt:map_state("right_buffer")
  end
  job.timer_nodes[#job.timer_nodes + 1] = node
  local intern = wc.interner(true)
  local insts = {}
  for _, inst in ipairs(node.instances) do
    insts[inst.index] = inst
  end
  local lo, hi = node.lo, node.hi
  local function late_of(t)
    local e = t and node.side[t.id]
    return function(st, v, ts, key)
      if e then
        e(st, v, ts)
        job.op_slot[0] = node.id
        return
      end
      if t then
        return -- a late tag no one reads
      end
      node.late_dropped = node.late_dropped + 1
      if not node.first_late then
        node.first_late = { value = v, ts = ts, key = key, subtask = st,
                            watermark = insts[st].watermark }
      end
    end
  end
  local fn, rich = node.fn, node.rich
  local f = rich and fn.process or fn
  local push1 = job:generate(node, "interval_join", rich, f, node.objs, insts, intern, C,
    node.emit, util.is_nil, "left_buffer", "right_buffer", lo, hi, true, LEFT, EVENT,
    late_of(node.left_late), no_ts)
  local push2 = job:generate(node, "interval_join", rich, f, node.objs, insts, intern, C,
    node.emit, util.is_nil, "right_buffer", "left_buffer", -hi, -lo, false, RIGHT, EVENT,
    late_of(node.right_late), no_ts)
  require("weir.connect").wire_sides(job, node, push1, push2)

  -- cleanup (Flink's onEventTime): a left timer at t drops the left bucket of t - hi (of t when
  -- hi <= 0), a right one the right bucket of t + lo (of t when lo > 0)
  node.on_watermark = function(inst, w)
    local tm = inst.timer
    local handles = inst.handles
    local lb, rb = handles.left_buffer, handles.right_buffer
    inst.firing = true
    while C.weir_timers_pop(inst.timers, EVENT, w, tm) == 1 do
      local kid, t = tm.key, tm.time_ms
      inst.kid = kid
      inst.row[0] = C.weir_kstate_row(inst.kstate, kid)
      if tm.start == LEFT then
        lb:remove(hi <= 0 and t or t - hi)
      else
        rb:remove(lo <= 0 and t + lo or t)
      end
    end
    inst.firing = false
  end
  node.on_processing_time = function() end
  job.firers[node.on_watermark] = { node = node }
end

return M
