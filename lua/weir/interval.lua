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
-- resolved now: the first lookup of a C function inside a trace aborts it ("symbol not in
-- cache"); these run per record and per timer
local _, _, _, _, _ = C.weir_kstate_clear, C.weir_kstate_row, C.weir_kstate_row_put,
  C.weir_timers_pop, C.weir_timers_register
local util = require("weir.util")
local codegen = require("weir.codegen")
local keyed = require("weir.keyed")
local wc = require("weir.wincontext")
local tnew = require("table.new")

local M = {}

local EVENT = tonumber(C.WEIR_TIME_EVENT)
local LUA, CELLS = tonumber(C.WEIR_KSTATE_LUA), tonumber(C.WEIR_KSTATE_CELLS)
local PROBE_WIDTH = 64 -- hi - lo up to which three or more buffered timestamps are probed
local BUCKET = {} -- the metatable of a timestamp's two or more records (the template)
local LEFT, RIGHT = 1, 2
-- Empty rows a subtask keeps for their keys' next records (the cleanup; about 0.4 KB each).
M.KEEP_ROWS = 16384

-- The push of one side. Upvalues: the user's function, the subtasks, the interner, the cell
-- bases of the two buffers (ours, other), the side's relative bounds, whether it is the left
-- side, the side id of its cleanup timers, the late and no-timestamp handlers, the kind of a
-- Lua value, the full-state error and whether the interval is narrow enough to probe.
codegen.add_templates({ interval_join = [[
local f, objs, insts, intern, C, emit, is_nil, OB, TB, rlo, rhi, left, SIDE, EVENT, late,
  no_ts, LUA, full, PROBE, tnew, BUCKET = ...
local next, type, getmetatable, setmetatable = next, type, getmetatable, setmetatable
local cur_st, cur_ts = 0, nil
local function out(x)
  if is_nil(x) then error("out(nil): records cannot be nil", 2) end
  emit(cur_st, x, cur_ts)
  OP_[0] = OPID_ -- the user function runs on
end
-- the pairs of v (at ts) with the other side's timestamp t: its record b, or its bucket b
local function pairs_with(st, inst, v, ts, t, b)
  local out_ts = t > ts and t or ts
  cur_st, cur_ts = st, out_ts
  local ctx = inst.ij_ctx
  ctx.ts = out_ts
  if left then
    ctx.left_ts, ctx.right_ts = ts, t
    if type(b) == "table" and getmetatable(b) == BUCKET then
      for j = 1, #b do
        CALL(v, b[j], ctx, out)
      end
    else
      CALL(v, b, ctx, out)
    end
  else
    ctx.left_ts, ctx.right_ts = t, ts
    if type(b) == "table" and getmetatable(b) == BUCKET then
      for j = 1, #b do
        CALL(b[j], v, ctx, out)
      end
    else
      CALL(b, v, ctx, out)
    end
  end
end
-- three or more buffered timestamps. Timestamps are whole ms, so with a narrow interval
-- (PROBE: at most 64 ms wide) each ms of [lo, hi] is looked up, in ascending order; otherwise
-- those in [lo, hi] are gathered and sorted
local function many(st, inst, v, ts, tbl, lo, hi)
  if PROBE then
    for t = lo, hi do
      local b = tbl[t]
      if b ~= nil then pairs_with(st, inst, v, ts, t, b) end
    end
    return
  end
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
-- The buffers are the map states left_buffer and right_buffer (weir.keyed_state's layout,
-- without TTL: [base + 2] the kind, [base + 3] the value slot in inst.vals), read and written
-- here without the handles (weir.interval's view turns them into the map states' logical
-- values): a timestamp's one record is the map's value itself, two or more are a bucket (a
-- sequence with the metatable BUCKET, which no record has); a buffer of kind 0 (empty) finds
-- its table, empty, in its value slot when a former buffer of the slot left one there
-- (weir.interval's cleanup).
return function(st, v, ts, key)
  if ts == nil then no_ts() end
  local inst = insts[st]
  if ts < inst.watermark then
    late(st, v, ts, key)
    return
  end
  local kid = intern(inst, key)
  inst.kid = kid
  local ks = inst.kstate
  local r = C.weir_kstate_row(ks, kid)
  if r == nil then
    r = C.weir_kstate_row_put(ks, kid)
    if r == nil then full() end
  elseif r[OB + 2] ~= LUA and r[TB + 2] ~= LUA then
    inst.ij_kept = inst.ij_kept - 1 -- a kept empty row (see the cleanup) in use again
  end
  inst.row[0] = r
  local vals = inst.vals
  local slot = r[OB + 3]
  local mine = vals[slot]
  if mine == nil then
    mine = tnew(0, 4) -- see the cleanup: a one-node hash part rehashes on each new key
    vals[slot] = mine
  end
  r[OB + 2] = LUA -- an emptied buffer's table stays with its row slot (see the cleanup)
  local had = mine[ts]
  local fresh = had == nil
  if fresh then
    mine[ts] = v
  elseif type(had) == "table" and getmetatable(had) == BUCKET then
    had[#had + 1] = v
  else
    mine[ts] = setmetatable({ had, v }, BUCKET)
  end
  -- the other side's buffer; one or two timestamps (the usual case) without a loop: a loop of
  -- a few trips per record is one LuaJIT can neither compile nor leave
  if r[TB + 2] == LUA then
    local tbl = vals[r[TB + 3] ]
    local lo, hi = ts + rlo, ts + rhi
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
  end
  -- Flink registers the cleanup timer for every record; the timer of a timestamp is there as
  -- long as its entry is (made together, gone together), so only a new timestamp's is new
  if fresh then
    C.weir_timers_register(inst.timers, EVENT, rhi > 0 and ts + rhi or ts, kid, SIDE, 0)
  end
end]] })

-- What the join function sees as ctx (Flink's ProcessJoinFunction.Context).
local Context = {}
Context.__index = Context
function Context:left_timestamp() return self.left_ts end
function Context:right_timestamp() return self.right_ts end
function Context:timestamp() return self.ts end
function Context:current_watermark() return self.inst.watermark end
function Context:output(t, v)
  keyed.side_output(self, t, v, self.ts)
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
    -- one timer per (key, side, buffered timestamp), never deleted: no index (runtime/timers.h)
    assert(C.weir_timers_set_distinct(inst.timers) == 0)
    inst.ij_found = {}
    -- the kept empty rows (the cleanup): two lists of (key id, watermark number) pairs, by
    -- the parity of the watermark that emptied the row; per key id the number of the
    -- watermark that last emptied its row; the watermarks so far; the kept rows
    inst.ij_idle, inst.ij_emptied, inst.ij_epoch = { { n = 0 }, { n = 0 } }, {}, 0
    inst.ij_kept = 0
    inst.ij_ctx = setmetatable({ inst = inst, node = node, job = job, ts = 0, left_ts = 0,
                                 right_ts = 0 }, Context)
  end
  -- the two buffers: map states made as open() makes them (weir.keyed_state), before records
  for _, inst in ipairs(node.instances) do
    local rt = keyed.open_context(inst, {}, job)
    rt:map_state("left_buffer")
    rt:map_state("right_buffer")
  end
  -- the buffers' logical values (weir.keyed_state.entries, and its restore): timestamp -> the
  -- sequence of its records, as Flink's map state holds them; kept as one record or a bucket
  local function copy(list, mt)
    local c = setmetatable({}, mt)
    for i = 1, #list do
      c[i] = list[i]
    end
    return c
  end
  local LSID, RSID = node.states.left_buffer.sid, node.states.right_buffer.sid
  node.state_view = function(sid, m)
    if sid ~= LSID and sid ~= RSID then
      return m -- a state of the join function's open
    end
    local t = {}
    for ts, x in pairs(m) do
      t[ts] = (type(x) == "table" and getmetatable(x) == BUCKET) and copy(x, nil) or { x }
    end
    return t
  end
  node.state_unview = function(sid, t)
    if sid ~= LSID and sid ~= RSID then
      return t
    end
    local m = tnew(0, 4)
    for ts, list in pairs(t) do
      m[ts] = #list == 1 and list[1] or copy(list, BUCKET)
    end
    return m
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
  local LB, RB = LSID * CELLS, RSID * CELLS
  local function full()
    error("map_state: keyed state is full (2^31 keys in this subtask)", 0)
  end
  local probe = hi - lo <= PROBE_WIDTH
  local push1 = job:generate(node, "interval_join", rich, f, node.objs, insts, intern, C,
    node.emit, util.is_nil, LB, RB, lo, hi, true, LEFT, EVENT, late_of(node.left_late), no_ts,
    LUA, full, probe, tnew, BUCKET)
  local push2 = job:generate(node, "interval_join", rich, f, node.objs, insts, intern, C,
    node.emit, util.is_nil, RB, LB, -hi, -lo, false, RIGHT, EVENT, late_of(node.right_late),
    no_ts, LUA, full, probe, tnew, BUCKET)
  require("weir.connect").wire_sides(job, node, push1, push2)

  -- cleanup (Flink's onEventTime): a left timer at t drops the left bucket of t - hi (of t when
  -- hi <= 0), a right one the right bucket of t + lo (of t when lo > 0); a map left empty is
  -- cleared, as MapState:remove does: its kind becomes 0 (no state: snapshots, restores and the
  -- state metrics see none), while its table, empty, stays with the row's value slot for the
  -- key's next record (or, once the row is dropped, for the key that gets the row slot next).
  -- A row whose two buffers are empty is kept for the key's next record, up to M.KEEP_ROWS
  -- such rows per subtask: beyond that, a row still empty two watermarks after it was emptied
  -- (no record for its key in between) is dropped, oldest first, so with more keys than that
  -- rows come and go as in Flink.
  local LOFF, ROFF = hi <= 0 and 0 or -hi, lo <= 0 and lo or 0
  local KEEP = M.KEEP_ROWS
  node.on_watermark = function(inst, w)
    local tm = inst.timer
    local timers, ks, vals = inst.timers, inst.kstate, inst.vals
    inst.firing = true
    -- the rows emptied two (or a multiple of two) watermarks ago and not written since:
    -- dropped while more than KEEP are kept, else carried on; the rest of the list is stale
    local epoch = inst.ij_epoch + 1
    inst.ij_epoch = epoch
    local emptied = inst.ij_emptied
    local old = inst.ij_idle[epoch % 2 + 1]
    local kept, j = inst.ij_kept, 0
    for i = 1, old.n, 2 do
      local kid, stamp = old[i], old[i + 1]
      old[i], old[i + 1] = false, false
      if emptied[kid] == stamp then
        local r = C.weir_kstate_row(ks, kid)
        if r == nil or r[LB + 2] ~= 0 or r[RB + 2] ~= 0 then
          emptied[kid] = false -- written since
        elseif kept > KEEP then
          emptied[kid] = false
          if C.weir_kstate_clear(ks, kid, LSID) == 1 then -- drops the row
            kept = kept - 1
          end
        else
          old[j + 1], old[j + 2] = kid, stamp
          j = j + 2
        end
      end
    end
    old.n = j
    local idle = old -- and this watermark's
    while C.weir_timers_pop(timers, EVENT, w, tm) == 1 do
      local kid = tm.key
      inst.kid = kid
      local r = C.weir_kstate_row(ks, kid)
      inst.row[0] = r
      local b, k, ob = RB, tm.time_ms + ROFF, LB
      if tm.start == LEFT then
        b, k, ob = LB, tm.time_ms + LOFF, RB
      end
      if r ~= nil and r[b + 2] == LUA then
        local m = vals[r[b + 3]]
        if m[k] ~= nil then
          m[k] = nil
          if next(m) == nil then
            r[b + 2] = 0
            if r[ob + 2] == 0 then
              emptied[kid] = epoch
              kept = kept + 1
              local ni = idle.n
              idle[ni + 1], idle[ni + 2], idle.n = kid, epoch, ni + 2
            end
          end
        end
      end
    end
    inst.ij_kept = kept
    inst.firing = false
  end
  -- weir.keyed.reset drops every row: none is kept then
  node.on_reset = function(inst)
    local idle = inst.ij_idle
    for l = 1, 2 do
      for i = 1, idle[l].n do
        idle[l][i] = false
      end
      idle[l].n = 0
    end
    for k in pairs(inst.ij_emptied) do
      inst.ij_emptied[k] = nil
    end
    inst.ij_kept = 0
  end
  node.on_processing_time = function() end
  job.firers[node.on_watermark] = { node = node }
end

return M
