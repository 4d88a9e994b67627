-- weir.windowop: Flink's WindowOperator and EvictingWindowOperator (SEMANTICS §5, §7, §8) for
-- one window node. State per subtask: the C store maps (key, window) to a slot and holds the
-- trigger's numeric state cells; C timers hold (time, key, window); Lua holds the contents of
-- each slot (the elements, or the reduce/aggregate accumulator) by slot id. The operator is
-- wired from parts (contents, a window's life, merges, the per-element push, the timers), each
-- a function that makes its closures: the per-element ones stay closures for the JIT. Its
-- shared rules and contexts are weir.wincontext's; weir.windowing is its face.
local C = require("weir.ffi")
-- resolved now: the first lookup of a C function inside a trace aborts it ("symbol not in
-- cache"); these run per element and per fire
local _, _, _, _, _, _, _, _ = C.weir_store_count, C.weir_store_count_add, C.weir_store_find,
  C.weir_timers_count, C.weir_timers_delete, C.weir_timers_next, C.weir_timers_pop,
  C.weir_timers_register
local windows = require("weir.windows")
local evictors = require("weir.evictors")
local duration = require("weir.duration")
local wc = require("weir.wincontext")
local mergeset = require("weir.mergeset")
local winstate = require("weir.winstate")

local M = {}

local INF = math.huge
local MAX_TIME = duration.MAX_TIME
local abs = math.abs
local EVENT, PROCESSING = tonumber(C.WEIR_TIME_EVENT), tonumber(C.WEIR_TIME_PROCESSING)
local cleanup_time, check_result, check_cleared = wc.cleanup_time, wc.check_result,
  wc.check_cleared

-- The state of a subtask is weir.winstate's (docs/ARCHITECTURE.md, window layer): it makes
-- every piece and is the only code that creates and drops a window.
local function init(job, node, inst)
  winstate.init(inst)
  wc.contexts(job, node, inst, winstate)
  inst.records = 0 -- records that reached this subtask (the stall warning's "arriving")
end

-- A slot's contents: add an element, fire, purge, and merge two slots' (sessions).
local function contents_ops(node, call_window_fn)
  local evictor = node.evictor
  local fn_kind, fn = node.fn_kind, node.user_fn
  local trace = node.trace
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
    winstate.fired(inst, slot)
    if trace then
      wc.trace_fire(trace, key, w.start, w.stop, "fired", node)
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
      local w = inst.wins[slot]
      wc.trace_fire(trace, inst.keys[inst.wkid[slot]], w.start, w.stop, "purged", node)
    end
    winstate.purge(inst, slot)
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
          wc.reduce_nil()
        end
        inst.contents[slot] = r
      end
    else -- aggregate
      if c == nil then
        c = fn.create()
        if c == nil then
          wc.aggregate_nil("create")
        end
      end
      local r = fn.add(v, c)
      if r == nil then
        wc.aggregate_nil("add")
      end
      inst.contents[slot] = r
    end
    C.weir_store_count_add(inst.store, slot, 1)
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

  return { fire = fire, purge = purge, add = add, merge_contents = merge_contents }
end

-- A window's life: its cleanup timer, a trigger result, its clearing.
local function window_ops(job, node, guard, cops)
  local trigger, evictor = node.trigger, node.evictor
  local rich, objs = node.rich, node.objs
  local is_event_time = node.assigner.is_event_time
  local merging = node.assigner.merging
  local fire, purge = cops.fire, cops.purge

  -- WindowOperator.registerCleanupTimer, once per element: a repeat (the same timer, already
  -- registered: the window's cleanup time, or the trigger's timer at that time) is a table
  -- check (weir.winstate: inst.tkc, tke, tkp).
  local function register_cleanup(inst, kid, w, slot)
    local t = cleanup_time(node, w:max_timestamp())
    if t ~= INF then
      local tkc = inst.tkc
      if tkc[slot] == t then
        return
      end
      if (is_event_time and inst.tke or inst.tkp)[slot] == t then
        tkc[slot] = t
        return
      end
      if C.weir_timers_register(inst.timers, is_event_time and EVENT or PROCESSING, t, kid,
          w.start, w.stop) >= 0 then
        tkc[slot] = t
      end
      if not is_event_time then
        job:processing_timers_changed()
      end
    end
  end

  -- A window goes with every piece it has (weir.winstate).
  local drop_slot, drop_at = winstate.drop, winstate.drop_at

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

  -- WindowOperator.clearAllState: contents, trigger (clear), window function (clear), and for
  -- merging windows the in-flight entry. sstart/sstop is the state window (= w unless merged);
  -- wslot, when given, is w's slot (or -1), which the timer that fires the cleanup has found.
  local function clear_all(inst, key, kid, w, sstart, sstop, wslot)
    local ctx = inst.tctx
    local own = not merging and wslot ~= nil -- the state window is w, its slot wslot
    local sslot = own and wslot or C.weir_store_find(inst.store, kid, sstart, sstop)
    if sslot >= 0 then
      purge(inst, sslot)
    end
    ctx.key, ctx.kid, ctx.window = key, kid, w
    ctx.slot = own and sslot or C.weir_store_find(inst.store, kid, w.start, w.stop)
    trigger:clear(w, ctx)
    check_cleared(ctx)
    if rich and objs[inst.index].clear then
      local wctx = inst.wctx
      wctx.win, wctx.wstart, wctx.wstop, wctx.kid, wctx.key = w, w.start, w.stop, kid, key
      objs[inst.index]:clear(wctx)
      own = false -- its window_state() may have opened w's slot
    end
    if merging then
      mergeset.retire(inst.msets, kid, w.start, w.stop)
    end
    if own then
      local slot = ctx.slot -- clear() may have opened it (trigger state)
      if slot >= 0 then
        drop_at(inst, slot)
      end
      return
    end
    drop_slot(inst, kid, sstart, sstop)
    drop_slot(inst, kid, w.start, w.stop)
  end

  -- The cleanup of window w at its cleanup time. Guarded, a failing clear() still drops the
  -- window: its state goes, whatever the trigger did not delete.
  local function cleanup(inst, key, kid, w, sstart, sstop, wslot)
    if not guard then
      return clear_all(inst, key, kid, w, sstart, sstop, wslot)
    end
    if not guard(clear_all, inst, key, kid, w, sstart, sstop) then
      if merging then
        mergeset.retire(inst.msets, kid, w.start, w.stop)
      end
      local sslot = C.weir_store_find(inst.store, kid, sstart, sstop)
      if sslot >= 0 then
        purge(inst, sslot)
      end
      drop_slot(inst, kid, sstart, sstop)
      drop_slot(inst, kid, w.start, w.stop)
    end
  end

  return { register_cleanup = register_cleanup, apply_result = apply_result,
           clear_all = clear_all, cleanup = cleanup, drop_slot = drop_slot }
end

-- Merging (session) windows: the merge a new window makes (WindowOperator's merge callback).
local function merge_ops(job, node, guard, cops, drop_slot)
  local trigger = node.trigger
  local is_event_time = node.assigner.is_event_time
  local lateness = node.lateness
  local merge_contents = cops.merge_contents
  -- A call of trigger method m (on_merge, clear) during a merge: guarded, a failure is routed
  -- and the merge goes on.
  local function merge_call(m, w, ctx)
    if guard then
      guard(trigger[m], trigger, w, ctx)
    else
      trigger[m](trigger, w, ctx)
    end
  end

  -- The merge callback of WindowOperator: trigger.on_merge, clear the swallowed windows'
  -- triggers and cleanup timers, then merge their contents into the surviving state window.
  -- The merged window's slot is opened here (push_merging opens it next anyway), so that its
  -- window object is the one the trigger sees; the swallowed windows' are theirs (each
  -- in-flight window has its slot): no window is made for the merge alone.
  local function on_merge(inst, key, kid, result, merged)
    local maxts = result.stop - 1
    if is_event_time and maxts + lateness <= inst.watermark then
      error(("merging made window %s, which is already late (watermark %s)"):format(
        tostring(windows.window(result.start, result.stop)), tostring(inst.watermark)), 0)
    elseif not is_event_time and maxts <= job:now() then
      error(("merging made window %s, which has already ended"):format(
        tostring(windows.window(result.start, result.stop))), 0)
    end
    local ctx = inst.tctx
    local rslot = winstate.open(inst, kid, result.start, result.stop)
    local rw = inst.wins[rslot]
    ctx.key, ctx.kid, ctx.window, ctx.slot = key, kid, rw, rslot
    ctx.merging = merged
    merge_call("on_merge", rw, ctx)
    ctx.merging = nil
    for i = 1, #merged do
      local m = merged[i]
      local mslot = C.weir_store_find(inst.store, kid, m.start, m.stop)
      local mw = mslot >= 0 and inst.wins[mslot] or windows.window(m.start, m.stop)
      ctx.window, ctx.slot = mw, mslot
      merge_call("clear", mw, ctx)
      check_cleared(ctx)
      local t = cleanup_time(node, m.stop - 1)
      if t ~= INF then
        local d = is_event_time and EVENT or PROCESSING
        C.weir_timers_delete(inst.timers, d, t, kid, m.start, m.stop)
        if mslot >= 0 then
          winstate.timer_gone(inst, mslot, d, t, d)
        end
      end
    end
    local target = winstate.open(inst, kid, result.sstart, result.sstop)
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

  ---MergingWindowSet.addWindow, and the merge it makes: the in-flight entry [s, e) ends in.
  local function add_window(inst, key, kid, s, e)
    local entry, merged = mergeset.add(inst.msets, kid, s, e)
    if merged then
      on_merge(inst, key, kid, entry, merged)
    end
    return entry
  end

  return { on_merge = on_merge, add_window = add_window }
end

-- The per-element functions: node.push, and push_merging for sessions (returned).
local function wire_push(job, node, intern, c, o, m)
  local assigner, trigger = node.assigner, node.trigger
  local is_event_time = assigner.is_event_time
  local merging = assigner.merging
  local lateness = node.lateness
  local trace = node.trace
  local starts = {}
  local add, open = c.add, winstate.open
  local apply_result, register_cleanup, add_window = o.apply_result, o.register_cleanup,
    m.add_window
  local function push_merging(st, v, ts, key)
    local inst = node.instances[st + 1]
    local kid = intern(inst, key)
    local s, e = assigner:session(v, ts, not is_event_time and job:now() or 0)
    local entry = add_window(inst, key, kid, s, e)
    local W = inst.watermark
    if inst.floor_top > W then -- after a rescale: the key group's lateness floor
      W = wc.floor_of(node, inst, key, W)
    end
    if is_event_time and cleanup_time(node, entry.stop - 1) <= W then
      mergeset.retire(inst.msets, kid, entry.start, entry.stop)
      if ts + lateness <= W then
        wc.late(node, st, v, ts, key)
      end
      return
    end
    local sslot = open(inst, kid, entry.sstart, entry.sstop)
    add(inst, sslot, v, ts)
    if trace then
      wc.trace_element(trace, key, is_event_time and ts or job:now())
    end
    local aslot = open(inst, kid, entry.start, entry.stop)
    local w = inst.wins[aslot]
    local ctx = inst.tctx
    ctx.key, ctx.kid, ctx.window, ctx.slot = key, kid, w, aslot
    local r = check_result(node, trigger:on_element(v, ts, w, ctx), "on_element")
    apply_result(inst, r, sslot, key, kid, w)
    register_cleanup(inst, kid, w, aslot)
  end

  node.push = function(st, v, ts, key)
    local inst = node.instances[st + 1]
    inst.records = inst.records + 1
    if is_event_time and (ts == nil or abs(ts) > MAX_TIME) then
      wc.no_timestamp(ts)
    end
    if merging then
      return push_merging(st, v, ts, key)
    end
    local kid = intern(inst, key)
    local n = assigner:assign(ts, not is_event_time and job:now() or 0, starts)
    local W = inst.watermark
    if inst.floor_top > W then -- after a rescale: the key group's lateness floor
      W = wc.floor_of(node, inst, key, W)
    end
    local skipped = true
    local ctx = inst.tctx
    for i = 1, n do
      local start = starts[i]
      local stop = assigner:stop(start)
      local maxts = stop == INF and INF or stop - 1
      if not (is_event_time and cleanup_time(node, maxts) <= W) then
        skipped = false
        local slot = open(inst, kid, start, stop)
        add(inst, slot, v, ts)
        if trace and i == 1 then
          wc.trace_element(trace, key, is_event_time and ts or job:now())
        end
        local w = inst.wins[slot]
        ctx.key, ctx.kid, ctx.window, ctx.slot = key, kid, w, slot
        local r = check_result(node, trigger:on_element(v, ts, w, ctx), "on_element")
        apply_result(inst, r, slot, key, kid, w)
        register_cleanup(inst, kid, w, slot)
      end
    end
    if skipped and is_event_time and ts + lateness <= W then
      wc.late(node, st, v, ts, key)
    end
  end
  return push_merging
end

-- The timers: node.on_watermark and node.on_processing_time; on_timer returned.
local function wire_timers(job, node, guard, o)
  local trigger = node.trigger
  local is_event_time = node.assigner.is_event_time
  local merging = node.assigner.merging
  local apply_result, cleanup = o.apply_result, o.cleanup
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
    local slot = C.weir_store_find(inst.store, kid, start, stop)
    if slot >= 0 then -- the popped timer is no longer registered
      winstate.timer_gone(inst, slot, domain, t, is_event_time and EVENT or PROCESSING)
    end
    local sstart, sstop = start, stop
    if merging then
      local entry = mergeset.find(inst.msets, kid, start, stop)
      if not entry then
        return -- a stale timer of a window merged away or retired
      end
      sstart, sstop = entry.sstart, entry.sstop
    end
    local key = inst.keys[kid]
    local w = slot >= 0 and inst.wins[slot] or windows.window(start, stop)
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
      local ws = ctx.slot -- w's slot, if it has one (a fire cannot open one without it)
      cleanup(inst, key, kid, w, sstart, sstop, ws >= 0 and ws or nil)
    end
  end

  ---Fires every event-time timer at or before the new watermark w (inst.watermark is w).
  node.on_watermark = function(inst, w)
    if inst.floors then
      wc.pass_floors(inst, w)
    end
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
  return on_timer
end

---Wires the window node: node.push(st, v, ts, key), node.on_watermark(inst, w) and
---node.on_processing_time(inst, t, as_if_due) (weir.windowing has the interface).
function M.instantiate(job, node)
  wc.setup(job, node)
  -- With on_error, each fire, trigger call and cleanup runs guarded: a failure goes to the
  -- error side output and the rest of the timer's work goes on (API.md, Errors).
  local guard = job:fire_guard()
  for _, inst in ipairs(node.instances) do
    init(job, node, inst)
  end
  job.timer_nodes[#job.timer_nodes + 1] = node
  local call_window_fn = wc.caller(node)
  local c = contents_ops(node, call_window_fn)
  local o = window_ops(job, node, guard, c)
  local m = merge_ops(job, node, guard, c, o.drop_slot)
  local push_merging = wire_push(job, node, wc.interner(node.keyed), c, o, m)
  -- for weir.aggwindow's Lua-trigger windows, which move here mid-call (aggwindow.move)
  node.general_ops = { apply_result = o.apply_result, register_cleanup = o.register_cleanup,
                       cleanup = o.cleanup }
  local on_timer = wire_timers(job, node, guard, o)
  local fire, clear_all, on_merge = c.fire, o.clear_all, m.on_merge
  -- for the error handler (weir.run, Failures): where a fire is, from these frames' arguments
  job.firers[node.on_watermark] = { node = node }
  job.firers[node.on_processing_time] = { node = node, processing = true }
  job.places[call_window_fn] = { node = node, key = 2, win = 3, start = 6, stop = 7 }
  job.places[fire] = { node = node, key = 3, win = 5 }
  job.places[clear_all] = { node = node, key = 2, win = 4 }
  job.places[on_merge] = { node = node, key = 2, range = 4 }
  job.places[on_timer] = { node = node, kid = 4, start = 5, stop = 6 }
  job.pushes[push_merging] = node -- node.push tail-calls it: its frame replaces the push's
  wc.user_places(job, node)
end

-- The face's interface (weir.windowing) ------------------------------------------------------

function M.stats(node, inst)
  local store, timers = inst.store, inst.timers
  local open = C.weir_store_stat(store, C.WEIR_STORE_OPEN)
  if node.assigner.merging then
    open = winstate.open_windows(inst) -- not the state windows' slots
  end
  return {
    open_windows = open,
    elements = C.weir_store_stat(store, C.WEIR_STORE_ELEMENTS),
    store_bytes = C.weir_store_stat(store, C.WEIR_STORE_BYTES),
    event_timers = C.weir_timers_count(timers, EVENT),
    processing_timers = C.weir_timers_count(timers, PROCESSING),
    next_event_timer = C.weir_timers_next(timers, EVENT),
    next_processing_timer = C.weir_timers_next(timers, PROCESSING),
  }
end

---The raw lists of one subtask by key id (weir.windowing.state turns them into keys).
function M.list(node, inst, keep, with_contents)
  return { windows = winstate.windows(node, inst, keep, with_contents),
           timers = winstate.timers(inst), gstate = inst.gstate }
end

function M.last_processing_time(_, inst)
  local last = -INF
  for _, t in ipairs(winstate.timers(inst)) do
    if t.domain == "processing" and t.time > last then
      last = t.time
    end
  end
  return last
end

function M.next_processing_time(_, inst)
  local t = C.weir_timers_next(inst.timers, PROCESSING)
  return t -- not a tail call: see weir.codegen, "Tail calls"
end

function M.key_of(_, inst, kid)
  return inst.keys[kid]
end

return M
