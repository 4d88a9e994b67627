-- weir.sessionop: the window operator for event-time session windows (static or dynamic gap)
-- with the built-in event_time trigger, no evictor and reduce or aggregate (with or without a
-- window function; weir.windowing.choose says when). It gives exactly what weir.windowop gives
-- for such a job (SEMANTICS §5, §5.4 MergingWindowSet: the same fires in the same order, late
-- records, allowed lateness re-fires, cleanup), with less work per element:
--
-- * The merging is in C (runtime/sessions.c): per key id a sorted array of its in-flight
--   windows, each with its state window and the slot id of the state window's accumulator.
--   One C call per element finds the windows the element's window touches (binary search),
--   merges them (the first keeps its state window, as Flink's), and registers the new or
--   merged window's timers; Lua then merges the swallowed accumulators into the survivor's
--   (the user's merge, in start order, as weir.windowop) and adds the element.
-- * Accumulators live in Lua by slot (inst.accs), with element counts (inst.counts) and fired
--   flags (inst.fired): no table or window object per element or window.
-- * Timers are a C min-heap of (time, registration) with lazy deletion: the timers of a
--   window merged away stay in the heap and are skipped when they come up (a timer counts only
--   while its window is in flight; a window's bounds only grow, so a window never comes back).
--   With no allowed lateness the trigger's timer and the cleanup are one. A watermark pops its
--   due timers in batches (one C call per batch) and fires them in order.
-- The inspectors read the state through M.list in weir.windowop's shapes (in-flight windows
-- with their state windows, timers in pop order), and weir.windowing.state builds the rest.
local ffi = require("ffi")
local C = require("weir.ffi")
-- resolved now: the first lookup of a C function inside a trace aborts it ("symbol not in
-- cache"); these run per element and per fire
local _, _, _, _, _, _, _ = C.weir_sessions_add, C.weir_sessions_due, C.weir_sessions_out,
  C.weir_sessions_put, C.weir_sessions_timer, C.weir_store_count, C.weir_store_find
local duration = require("weir.duration")
local wc = require("weir.wincontext")
local winstate = require("weir.winstate")
local winckpt = require("weir.winckpt")

local M = {}

local INF = math.huge
local abs, MAX_TIME = math.abs, duration.MAX_TIME
local no_timestamp, late = wc.no_timestamp, wc.late
local floor_of, pass_floors = wc.floor_of, wc.pass_floors
local reduce_nil, aggregate_nil = wc.reduce_nil, wc.aggregate_nil
local LATE = tonumber(C.WEIR_SESSION_LATE)
local FIRE, CLEANUP = tonumber(C.WEIR_SESSION_FIRE), tonumber(C.WEIR_SESSION_CLEANUP)

local session_t = ffi.typeof("weir_session_t[?]")
local CHUNK = 256 -- due timers per C call

-- Tests set disabled to run session jobs on weir.windowop (weir.windowing.choose reads it);
-- used counts the window nodes this operator runs.
M.disabled = false
M.used = 0

local function failed(rc)
  error(("session windows: %s"):format(ffi.string(C.weir_strerror(rc))), 0)
end

-- The state home of the contexts (wincontext): global_state() per key; window_state() is not
-- available for merging windows (the context says so before asking).
local home = {}

function home.global_state(inst, kid)
  local g = inst.gstate[kid]
  if not g then
    g = {}
    inst.gstate[kid] = g
  end
  return g
end

-- A subtask's state, fresh.
local function fresh(node, inst)
  inst.sess = ffi.gc(C.weir_sessions_new(node.lateness), C.weir_sessions_free)
  if inst.sess == nil then
    failed(C.WEIR_EINVAL)
  end
  inst.key_ids, inst.keys = {}, {}
  inst.accs, inst.counts, inst.fired = {}, {}, {}
  inst.gstate = {}
  inst.elements = 0
end

local function init(job, node, inst)
  fresh(node, inst)
  inst.due = session_t(CHUNK)
  inst.tstat = ffi.new("double[2]")
  wc.contexts(job, node, inst, home)
  inst.records = 0 -- records that reached this subtask (the stall warning's "arriving")
end

---Wires the window node (weir.windowing has the interface).
function M.instantiate(job, node)
  M.used = M.used + 1
  wc.setup(job, node)
  for _, inst in ipairs(node.instances) do
    init(job, node, inst)
  end
  job.timer_nodes[#job.timer_nodes + 1] = node
  local call_window_fn = wc.caller(node)
  local assigner = node.assigner
  local gap = not assigner.gap_fn and assigner.gap or nil
  local lateness = node.lateness
  local fn_kind, fn = node.fn_kind, node.user_fn
  local reduce = fn_kind == "reduce" and fn or nil
  local create, add, merge, result
  if not reduce then
    create, add, merge, result = fn.create, fn.add, fn.merge, fn.result
  end
  local instances = node.instances
  local intern = wc.interner(node.keyed)

  local function fire(inst, kid, slot, start, stop)
    local acc = inst.accs[slot]
    if acc == nil then
      return
    end
    inst.fired[slot] = true
    if reduce then
      call_window_fn(inst, inst.keys[kid], nil, { acc }, kid, start, stop)
    else
      call_window_fn(inst, inst.keys[kid], nil, { result(acc) }, kid, start, stop)
    end
  end

  -- Swallowed window out[i] of a merge into the survivor's state, slot target (weir.windowop's
  -- merge_contents).
  local function merge_one(inst, source, target)
    if source == target then
      return
    end
    local accs, counts = inst.accs, inst.counts
    local c = accs[source]
    if c ~= nil then
      local t = accs[target]
      if t == nil then
        accs[target] = c
      elseif reduce then
        accs[target] = reduce(t, c)
      else
        accs[target] = merge(t, c)
      end
      counts[target] = (counts[target] or 0) + counts[source]
    end
    accs[source], counts[source], inst.fired[source] = nil, nil, nil
  end

  -- The swallowed windows out[1 .. r - 1] into the survivor's, in start order. A merge swallows
  -- one window (the element grows it) or two (it bridges them) nearly always: those straight
  -- on, without a loop of one or two trips (which aborts the traces that reach it).
  local function merge_into(inst, out, r)
    local target = out[0].slot
    merge_one(inst, out[1].slot, target)
    if r > 2 then
      merge_one(inst, out[2].slot, target)
      for i = 3, r - 1 do
        merge_one(inst, out[i].slot, target)
      end
    end
  end

  node.push = function(st, v, ts, key)
    local inst = instances[st + 1]
    inst.records = inst.records + 1
    if ts == nil or abs(ts) > MAX_TIME then
      no_timestamp(ts)
    end
    local kid = intern(inst, key)
    local s, e
    if gap then
      s, e = ts, ts + gap
    else
      s, e = assigner:session(v, ts, 0)
    end
    local W = inst.watermark
    if inst.floor_top > W then -- after a rescale: the key group's lateness floor
      W = floor_of(node, inst, key, W)
    end
    local r = C.weir_sessions_add(inst.sess, kid, s, e, W)
    if r < 0 then
      if r ~= LATE then
        failed(r)
      end
      if ts + lateness <= W then
        late(node, st, v, ts, key)
      end
      return
    end
    local out = C.weir_sessions_out(inst.sess)
    if r > 1 then
      merge_into(inst, out, r)
    end
    local slot = out[0].slot
    local accs = inst.accs
    local c = accs[slot]
    if reduce then
      if c ~= nil then
        c = reduce(c, v)
        if c == nil then
          reduce_nil()
        end
      else
        c = v
      end
    else
      if c == nil then
        c = create()
        if c == nil then
          aggregate_nil("create")
        end
      end
      c = add(v, c)
      if c == nil then
        aggregate_nil("add")
      end
    end
    accs[slot] = c
    local counts = inst.counts
    counts[slot] = (counts[slot] or 0) + 1
    inst.elements = inst.elements + 1
    local stop = out[0].stop
    if stop - 1 <= W then -- the trigger's FIRE on an element of a window already due
      fire(inst, kid, slot, out[0].start, stop)
    end
  end

  ---Fires every timer at or before the new watermark w (inst.watermark is w), a chunk of due
  ---timers per C call, in one loop.
  node.on_watermark = function(inst, w)
    if inst.floors then
      pass_floors(inst, w)
    end
    inst.firing = true
    local due = inst.due
    local i, n = 0, C.weir_sessions_due(inst.sess, w, due, CHUNK)
    while i < n do
      local d = due + i
      local what = d.what -- FIRE, CLEANUP or both
      if what ~= CLEANUP then
        fire(inst, d.kid, d.slot, d.start, d.stop)
      end
      if what ~= FIRE then
        local slot = d.slot
        local counts = inst.counts
        inst.elements = inst.elements - (counts[slot] or 0)
        inst.accs[slot], counts[slot], inst.fired[slot] = nil, nil, nil
      end
      i = i + 1
      if i == CHUNK then
        i, n = 0, C.weir_sessions_due(inst.sess, w, due, CHUNK)
      end
    end
    inst.firing = false
  end
  node.on_processing_time = function() end

  -- for the error handler (weir.run, Failures): where a fire is, from these frames' arguments
  job.firers[node.on_watermark] = { node = node }
  job.places[call_window_fn] = { node = node, key = 2, win = 3, start = 6, stop = 7 }
  job.places[fire] = { node = node, kid = 2, start = 4, stop = 5 }
  wc.user_places(job, node)
end

-- The face's interface (weir.windowing) ------------------------------------------------------

-- The live timers of a subtask in pop order (a copy from C).
local function live_timers(inst)
  local n = C.weir_sessions_timers(inst.sess, nil, 0)
  local buf = session_t(math.max(n, 1))
  return buf, C.weir_sessions_timers(inst.sess, buf, n)
end

function M.stats(_, inst)
  local ts = inst.tstat
  C.weir_sessions_timer_stat(inst.sess, ts)
  return {
    open_windows = C.weir_sessions_stat(inst.sess, C.WEIR_STORE_OPEN),
    elements = inst.elements,
    store_bytes = C.weir_sessions_stat(inst.sess, C.WEIR_STORE_BYTES),
    event_timers = ts[0],
    processing_timers = 0,
    next_event_timer = ts[1],
    next_processing_timer = INF,
  }
end

---The raw lists of one subtask by key id (weir.windowing.state turns them into keys), in
---weir.windowop's shapes: the in-flight windows with their state windows, the timers.
function M.list(_, inst, keep, with_contents)
  local windows = {}
  local n = C.weir_sessions_windows(inst.sess, nil, 0)
  local buf = session_t(math.max(n, 1))
  C.weir_sessions_windows(inst.sess, buf, n)
  for i = 0, n - 1 do
    local w = buf[i]
    local kid, slot = w.kid, w.slot
    if keep(kid) then
      windows[#windows + 1] = {
        kid = kid, start = w.start, stop = w.stop, sstart = w.sstart, sstop = w.sstop,
        contents = with_contents and inst.accs[slot] or nil,
        count = inst.counts[slot] or 0,
        fired = inst.fired[slot] ~= nil,
      }
    end
  end
  local timers = {}
  local tb, tn = live_timers(inst)
  for i = 0, tn - 1 do
    local t = tb[i]
    timers[#timers + 1] = { domain = "event", time = t.time, kid = t.kid, start = t.start,
                            stop = t.stop }
  end
  return { windows = windows, timers = timers, gstate = inst.gstate }
end

-- Checkpoints ------------------------------------------------------------------------------
-- The state is written as the general operator's (weir.winckpt's "general" sections), so that
-- a checkpoint restores on either operator: a snapshot has runtime/sessions.c lay each
-- subtask's windows out the way weir.windowop keeps them (weir.winstate: a slot per in-flight
-- window and per state window, the contents in the state window's, the merging sets, the
-- timers in pop order) as packed columns by section, and winckpt adds the contents; a restore
-- has winckpt read the sections into stand-in subtasks and takes the windows and timers from
-- them.

local function stand_in(inst)
  local sh = { index = inst.index, watermark = inst.watermark }
  winstate.init(sh)
  return sh
end

-- a stand-in node: the node's fields, with the stand-in subtasks
local function stand_in_node(node, insts)
  return setmetatable({ instances = insts }, { __index = node })
end

---The node's checkpoint sections: weir.winckpt's "general" sections, made from the C state
---(weir.winckpt.snapshot of "sessions").
function M.snapshot(node, what)
  return winckpt.snapshot(node, "sessions", what)
end

---Restores the sections of groups (key group -> section, repr "general") into fresh subtasks.
function M.restore(job, node, groups)
  local insts = {}
  for i, inst in ipairs(node.instances) do
    insts[i] = stand_in(inst)
    insts[i].keys, insts[i].key_ids, insts[i].gstate = inst.keys, inst.key_ids, inst.gstate
  end
  winckpt.restore(job, stand_in_node(node, insts), "general", groups)
  for i, inst in ipairs(node.instances) do
    local sh, sess = insts[i], inst.sess
    for kid, list in pairs(sh.msets) do
      for _, e in ipairs(list) do
        local slot = C.weir_sessions_put(sess, kid, e.start, e.stop, e.sstart, e.sstop)
        if slot < 0 then
          failed(slot)
        end
        local sslot = C.weir_store_find(sh.store, kid, e.sstart, e.sstop)
        if sslot >= 0 then
          local count = C.weir_store_count(sh.store, sslot)
          inst.accs[slot], inst.counts[slot] = sh.contents[sslot], count
          inst.fired[slot] = sh.fires[sslot] and true or nil
          inst.elements = inst.elements + count
        end
      end
    end
    for _, t in ipairs(winstate.timers(sh)) do
      if t.domain == "event" then
        local rc = C.weir_sessions_timer(sess, t.kid, t.start, t.stop, t.time)
        if rc ~= 0 then
          failed(rc)
        end
      end
    end
  end
end

---Makes every subtask's window state fresh (the round-trip mode throws the state away).
function M.reset(node)
  for _, inst in ipairs(node.instances) do
    fresh(node, inst)
  end
end

---Processing-time timers: none (event time only).
function M.last_processing_time()
  return -INF
end

function M.next_processing_time()
  return INF
end

function M.key_of(_, inst, kid)
  return inst.keys[kid]
end

-- set-up, listing and checkpoint code, never traced (weir.codegen, "Set-up code")
for _, f in ipairs({ init, M.instantiate, M.list, live_timers, M.snapshot, M.restore,
    M.reset, stand_in, fresh }) do
  jit.off(f)
end

return M
