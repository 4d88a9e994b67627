-- weir.aggwindow: the window operator for its most common shape, built for speed: event-time
-- tumbling or sliding windows, the built-in event_time trigger, no evictor, and an incremental
-- function (reduce or aggregate, with or without a process function). It gives exactly what
-- weir.windowop gives for such a job (SEMANTICS §5: the same fires, in the same order, the same
-- late records, cleanup and timers), with less work per element:
--
-- * The trigger is known, so its timers are registered once, when a window is created, in the
--   order weir.windowop would register them (later registrations are no-ops there: timers are
--   a set). A window that is already due fires at once, as event_time() returns FIRE.
-- * No window object per slot: windows are made when they fire. Tumbling windows live in a
--   compact C table (wintab.c: one cache line per lookup) instead of the general store, and
--   each key's last window is remembered in Lua, so most elements need no C call at all.
-- * Keys: a whole-number key is its own key id; only other keys are interned.
-- * A watermark's fires find their windows' state in one C call per chunk of fires, so that
--   the cache misses of many keys overlap.
-- * Timers: per time a FIFO of key ids (the time says the window), and a heap of the distinct
--   times. A watermark closes a window of every key at the same time, so registering is an
--   append and popping a walk down an array; the order is (time, registration), as the C timer
--   service's.
-- * Sliding windows are computed by slices (the issue's target d): slices.c holds one
--   accumulator per (key, slide-long slice), per key in a ring sorted by start. An element
--   goes into its one slice, and a window fires with the merge (aggregate.merge, or reduce's
--   function) of the run of slices it covers, in start order: per key the slices of its last
--   fired window are two stacks of merged runs (slices.c, weir_slices_fire), so a fire costs
--   about three merges whatever the window's length. A window exists while a slice it covers
--   does; the timers of the windows an element creates are registered in the assigner's order
--   (latest start first). Used when the aggregate has merge and a number for accumulator (or a
--   reduce gets numbers), size is a multiple of slide and the job does not say
--   weir.env{slicing = false}; merge must then be exact, associative and have create() for
--   identity for the result to equal Flink's (counts, integer sums, min, max are; a
--   floating-point sum may differ in its last bits).
-- * Built-in aggregates (weir.aggregates) on tumbling windows are computed in C
--   (runtime/aggs.c): an element is only its (key id, timestamp, value) appended to the
--   subtask's batch, which one C call applies (window start, lookup, accumulate) before anything
--   reads the state; a watermark's fires read the results and drop the windows in one C call
--   per chunk, and without a window function each fire emits its record (key, start, stop,
--   value) straight from them. An element at or behind the watermark (maybe late, maybe due)
--   goes one at a time, after the batch.
local ffi = require("ffi")
local C = require("weir.ffi")
local windows = require("weir.windows")
local wc = require("weir.wincontext")
local timerq = require("weir.timerq")
local aggstate = require("weir.aggstate")
local duration = require("weir.duration")
local aggregates = require("weir.aggregates")

local M = {}

local INF = math.huge
local no_timestamp, late = wc.no_timestamp, wc.late
local floor_of, pass_floors = wc.floor_of, wc.pass_floors
local reduce_nil, aggregate_nil = wc.reduce_nil, wc.aggregate_nil
local abs, MAX_TIME = math.abs, duration.MAX_TIME
-- a sliced window operator's job start: its first records (sliding_push's register_apart)
local START_UP = 16384
local cast, double_p, uintptr_t = ffi.cast, ffi.typeof("double *"), ffi.typeof("uintptr_t")

-- Tests set disabled to compare the two operators on the same jobs (weir.windowing.choose reads
-- it); used counts the window nodes this operator runs.
M.disabled = false
M.used = 0

-- resolved now: the first lookup of a C function inside a trace aborts it ("symbol not in cache")
local _, _, _ = C.weir_wintab_take, C.weir_wintab_trim, C.weir_slices_run_ops

local function store_failed(rc)
  error(("window store: %s"):format(ffi.string(C.weir_strerror(rc))), 0)
end

local timers_add = timerq.add
local key_of, chunk_of = aggstate.key_of, aggstate.chunk_of

-- A window's timers, contents, fire and clearing.
local function window_ops(node, guard, call_window_fn)
  local size, slide = node.assigner.size, node.assigner.slide
  local k = size / slide
  local fn_kind, fn = node.fn_kind, node.user_fn
  local reduce = fn_kind == "reduce" and fn or nil
  local result = not reduce and fn.result or nil
  local slice_merge = k > 1 and aggstate.merge_of(node) or nil
  local rich, objs = node.rich, node.objs
  local trace = node.trace
  local cleanup_of = wc.cleanup_of(node)
  local drop = aggstate.drop

  -- A timer's entry is its window's key id, and its time says the window: a key id is a timer
  -- at the window's max timestamp (which is also the cleanup time without allowed lateness),
  -- a negated one a timer at its cleanup time (max timestamp + lateness).
  local function register(inst, t, kid, start)
    if t == INF then
      return
    end
    if t == start + size - 1 then
      timers_add(inst.tq, t, kid)
    else
      timers_add(inst.tq, t, -kid)
    end
  end

  -- The accumulator of window [a, a + size) of kid: its slice's, or the merge of its slices'.
  local function contents(inst, kid, a)
    local accs = inst.accs
    if k == 1 then
      local id = C.weir_wintab_find(inst.wtab, kid, a)
      if id < 0 then
        return nil
      end
      return accs[id]
    end
    return aggstate.slices_acc(inst, kid, a, a + size, slice_merge)
  end

  local function fire_with(inst, key, kid, a, acc)
    if acc == nil then
      return
    end
    if trace then
      wc.trace_fire(trace, key, a, a + size, "fired", node)
    end
    -- no window object: the function's context makes one if asked (wincontext.caller); the
    -- one-element list is the subtask's, reused (`elements` is read-only, docs/API.md)
    local one = inst.one
    if reduce then
      one[1] = acc
    else
      one[1] = result(acc)
    end
    call_window_fn(inst, key, nil, one, kid, a, a + size)
  end

  local function fire(inst, key, kid, a)
    return fire_with(inst, key, kid, a, contents(inst, kid, a))
  end

  local function fire_in_push(inst, key, kid, a)
    if guard then
      guard(fire, inst, key, kid, a)
    else
      fire(inst, key, kid, a)
    end
  end

  local function rich_clear(inst, key, kid, a)
    local wctx = inst.wctx
    local w = windows.window(a, a + size)
    wctx.win, wctx.wstart, wctx.wstop, wctx.kid, wctx.key = w, a, a + size, kid, key
    objs[inst.index]:clear(wctx)
  end

  -- WindowOperator.clearAllState of window [a, a + size): the trigger's clear has nothing left
  -- to delete (its one timer has fired), the function's clear, then the state: the window's
  -- slice when it is the last window covering it, and its window_state.
  local function clear(inst, key, kid, a)
    if rich and objs[inst.index].clear then
      if guard then
        guard(rich_clear, inst, key, kid, a) -- failing, the window's state still goes
      else
        rich_clear(inst, key, kid, a)
      end
    end
    drop(inst, k, kid, a, size)
  end

  -- clear() of a sliced window whose slice its fire dropped in C (weir_slices_fire): the
  -- function's clear, then its window_state
  local function clear_dropped(inst, key, kid, a)
    if rich and objs[inst.index].clear then
      if guard then
        guard(rich_clear, inst, key, kid, a)
      else
        rich_clear(inst, key, kid, a)
      end
    end
    aggstate.drop_window_state(inst, kid, a, size)
  end

  -- clear() of a tumbling window whose fire took it out of wtab (weir_wintab_take) with its
  -- id: the function's clear, then its accumulator and window_state
  local function clear_taken(inst, key, kid, a, id)
    if rich and objs[inst.index].clear then
      if guard then
        guard(rich_clear, inst, key, kid, a)
      else
        rich_clear(inst, key, kid, a)
      end
    end
    inst.w_taken = inst.w_taken - 1 -- gone now for the stats too
    if id >= 0 then
      inst.accs[id], inst.counts[id] = nil, nil
    end
    if inst.last_start[kid] == a then
      inst.last_start[kid] = nil
    end
    aggstate.drop_window_state(inst, kid, a, size)
  end

  return { cleanup_of = cleanup_of, register = register, fire_with = fire_with, fire = fire,
           fire_in_push = fire_in_push, rich_clear = rich_clear, clear = clear,
           clear_dropped = clear_dropped, clear_taken = clear_taken }
end

-- Tumbling and sliced windows have push functions of their own: a trace recorded for one
-- is entered by every closure of its prototype, and a branch on the kind would send the other
-- kind's elements out through a side exit on every element.
local function tumbling_push(node, intern, o)
  local size, slide, offset = node.assigner.size, node.assigner.slide, node.assigner.offset
  local lateness = node.lateness
  local fn_kind, fn = node.fn_kind, node.user_fn
  local reduce = fn_kind == "reduce" and fn or nil
  local create, add
  if not reduce then
    create, add = fn.create, fn.add
  end
  local trace = node.trace
  local instances = node.instances
  local cleanup_of, register, fire_in_push = o.cleanup_of, o.register, o.fire_in_push
  return function(st, v, ts, key)
    local inst = instances[st + 1]
    inst.records = inst.records + 1
    if ts == nil or abs(ts) > MAX_TIME then
      no_timestamp(ts)
    end
    local kid = intern(inst, key)
    local W = inst.watermark
    if inst.floor_top > W then -- after a rescale: the key group's lateness floor
      W = floor_of(node, inst, key, W)
    end
    -- Tumbling: the key's last window is remembered (start and id). Consecutive elements of a
    -- key mostly fall in it, and then neither the window's start is computed (a division) nor C
    -- called (a C call also keeps the JIT from sinking the record); it is open, so not late.
    local q = inst.last_start[kid]
    local slot
    if q ~= nil and ts >= q and ts < q + slide then
      slot = inst.last_id[kid]
    else
      q = ts - (ts - offset) % slide -- the element's window
      if cleanup_of(q + size - 1) <= W then
        return late(node, st, v, ts, key) -- its window is late
      end
      slot = C.weir_wintab_add(inst.wtab, kid, q)
      if slot < 0 then
        store_failed(slot)
      end
      inst.last_start[kid], inst.last_id[kid] = q, slot
    end
    local counts = inst.counts
    counts[slot] = (counts[slot] or 0) + 1
    local accs = inst.accs
    local acc = accs[slot]
    local fresh = acc == nil
    if reduce then
      if not fresh then
        v = reduce(acc, v)
        if v == nil then
          reduce_nil()
        end
      end
      accs[slot] = v
    else
      if fresh then
        acc = create()
        if acc == nil then
          aggregate_nil("create")
        end
      end
      acc = add(v, acc)
      if acc == nil then
        aggregate_nil("add")
      end
      accs[slot] = acc
    end
    if trace then
      wc.trace_element(trace, key, ts)
    end
    local maxts = q + size - 1
    if maxts <= W then
      fire_in_push(inst, key, kid, q)
    elseif fresh then
      register(inst, maxts, kid, q)
    end
    if fresh and lateness > 0 then
      register(inst, cleanup_of(maxts), kid, q)
    end
  end
end

local function sliding_push(node, intern, o)
  local size, slide, offset = node.assigner.size, node.assigner.slide, node.assigner.offset
  local k = size / slide
  local lateness = node.lateness
  local reduce = node.fn_kind == "reduce" and node.user_fn or nil
  local add, create
  if not reduce then
    add, create = node.user_fn.add, node.user_fn.create
  end
  local trace = node.trace
  local instances = node.instances
  local cleanup_of, register, fire_in_push = o.cleanup_of, o.register, o.fire_in_push
  local push_sliced
  -- reduce keeps the elements themselves: sliced while they are numbers, which the node's first
  -- element says; a node whose first element is no number, with nothing stored yet, moves to
  -- the general operator (node.to_general, weir.windowing's) and forwards there
  local decided, general = not reduce, false
  local function stores_nothing()
    for _, inst in ipairs(instances) do
      if C.weir_slices_stat(inst.slices, C.WEIR_STORE_OPEN) > 0 or inst.tq.count > 0
          or next(inst.gstate) ~= nil then
        return false
      end
    end
    return true
  end

  local function push_sliding(st, v, ts, key)
    if not decided then
      if not general then
        general = node.general_push -- moved by a restore
        if not general and type(v) ~= "number" and node.to_general and stores_nothing() then
          general = node.to_general()
        end
        decided = not general
      end
      if general then
        return general(st, v, ts, key)
      end
    end
    local inst = instances[st + 1]
    inst.records = inst.records + 1
    if ts == nil or abs(ts) > MAX_TIME then
      no_timestamp(ts)
    end
    local kid = intern(inst, key)
    local W = inst.watermark
    if inst.floor_top > W then -- after a rescale: the key group's lateness floor
      W = floor_of(node, inst, key, W)
    end
    local q = ts - (ts - offset) % slide -- the element's slice: its latest window starts there
    if cleanup_of(q + size - 1) <= W then
      return late(node, st, v, ts, key) -- every window of the element is late
    end
    return push_sliced(inst, ts, v, key, kid, q, W)
  end

  -- The windows of a new slice that is not just after the key's previous one (a key's first
  -- slice: all k windows), from q down.
  local function register_loop(inst, kid, q, W, prev, next)
    local a = q
    for _ = 1, k do
      local maxts = a + size - 1
      local cleanup = cleanup_of(maxts)
      if cleanup <= W or a <= prev then
        break -- late, or it covers prev (and so do the earlier windows)
      end
      if a + size - slide < next then
        if maxts > W then
          register(inst, maxts, kid, a)
        end
        if lateness > 0 then
          register(inst, cleanup, kid, a)
        end
      end
      a = a - slide
    end
  end
  -- register_loop's caller at a job's start, never compiled (jit.off): then every key's first
  -- slice runs that loop, and a trace of the element path recorded through it would link into
  -- the loop's trace, the steady element path (one window per slice) then running as side
  -- traces of it, ~1.5x slower for the whole job (bench/README.md "sliding"); through here a
  -- trace aborts ("blacklisted") instead, so the element path's root trace is recorded on the
  -- steady path. The loop itself is still compiled (its own trace). Bounded (START_UP): a
  -- root trace aborted a dozen times is blacklisted, and a job whose elements keep needing the
  -- loop (new keys, sparse keys: nexmark_q5) is better off with it compiled in.
  local function register_apart(inst, kid, q, W, prev, next)
    return register_loop(inst, kid, q, W, prev, next)
  end
  jit.off(register_apart)

  -- A sliding window element: into its slice, then the windows it is in: q, q - slide, ...
  -- that are not late, latest first (the assigner's order). A new slice creates the windows
  -- that cover neither neighbouring slice of the key; their timers are registered before the
  -- element is added (registering emits nothing, so this order is the operator's), so that a
  -- failing add() routed to on_error leaves no window without its timers.
  function push_sliced(inst, ts, v, key, kid, q, W) -- luacheck: ignore 111
    local cell, fresh
    if inst.sl_start[kid] == q then
      -- the key's last slice: its accumulator through the pointer kept, the count later
      cell, fresh = cast(double_p, inst.sl_cell[kid]), false
      inst.sl_hits[kid] = inst.sl_hits[kid] + 1
    else
      local last = inst.sl_start[kid]
      if last ~= nil and inst.sl_hits[kid] > 0 then
        C.weir_slices_count_add(inst.slices, kid, last, inst.sl_hits[kid])
      end
      local near = inst.near -- a new slice's neighbours come with it
      cell = C.weir_slices_acc_near(inst.slices, kid, q, near)
      if cell == nil then
        error("window store: too many open slices", 0)
      end
      fresh = near[0] == 1
      -- the pointer kept as a number: a pointer in a table is a boxed cdata, one allocation
      inst.sl_start[kid], inst.sl_hits[kid] = q, 0
      inst.sl_cell[kid] = tonumber(cast(uintptr_t, cell))
    end
    if fresh then
      if not reduce then
        cell[0] = create()
      end
      local near = inst.near
      local prev, next = near[1], near[2]
      local a = q
      -- the common case, the key's previous slice just before this one: one new window, q's
      -- (not late: push_sliding saw to it), without the loop
      local one = q - slide <= prev
      if one and a + size - slide < next then
        local maxts = a + size - 1
        if maxts > W then
          register(inst, maxts, kid, a)
        end
        if lateness > 0 then
          register(inst, cleanup_of(maxts), kid, a)
        end
      end
      if not one then
        -- apart while the job starts: at most its first START_UP records, while about half
        -- of them or more needed this loop (every key's first slice); then the loop directly
        local r = inst.records
        if r <= START_UP and (inst.sl_apart + 1) * 2 > r then
          inst.sl_apart = inst.sl_apart + 1
          register_apart(inst, kid, q, W, prev, next)
        else
          register_loop(inst, kid, q, W, prev, next)
        end
      end
    end
    local acc
    if reduce then
      acc = v
      if not fresh then
        acc = reduce(cell[0], v)
      end
      if type(acc) ~= "number" then
        if acc == nil then
          reduce_nil()
        end
        error(("reduce: %s %s; sliced sliding windows keep numbers (weir.env{slicing = false} "
          .. "keeps any value)"):format(fresh and "got the value" or "returned",
          tostring(acc)), 0)
      end
    else
      acc = add(v, cell[0])
      if type(acc) ~= "number" then
        error(("aggregate: add() returned %s; sliced sliding windows keep number accumulators "
          .. "(weir.env{slicing = false} keeps any value)"):format(tostring(acc)), 0)
      end
    end
    cell[0] = acc
    if trace then
      wc.trace_element(trace, key, ts)
    end
    if q + slide - 1 > W then
      return -- the earliest window of the element is not due: none is
    end
    -- the slice is at or below the watermark: a fire may have queued it (slices.c)
    C.weir_slices_touch(inst.slices, kid, q)
    local a = q
    for _ = 1, k do
      local maxts = a + size - 1
      if cleanup_of(maxts) <= W then
        break
      end
      if maxts <= W then
        fire_in_push(inst, key, kid, a)
      end
      a = a - slide
    end
  end
  return push_sliding
end

-- Built-in aggregates in C (tumbling) ----------------------------------------------------------

-- A fired window's result value: its record without a window function, else the function's
-- call with { value } (a list of the subtask's, reused: `elements` is read-only).
local function cagg_ops(node, guard, call_window_fn, o)
  local size, offset = node.assigner.size, node.assigner.offset
  local lateness = node.lateness
  local trace = node.trace
  local builtin_out = node.builtin_out
  local emit = node.emit
  local window_result = aggregates.window_result
  -- aggregates.record, here so that the per-fire loop stays in this module
  local function record(key, start, stop, x)
    if type(key) == "number" then
      return ffi.new(window_result, key, start, stop, x)
    end
    return { key = key, start = start, stop = stop, value = x }
  end
  local value = node.user_fn.builtin.value
  local cleanup_of, register = o.cleanup_of, o.register

  local function fire_value(inst, key, kid, a, x)
    if trace then
      wc.trace_fire(trace, key, a, a + size, "fired", node)
    end
    if builtin_out then
      emit(inst.index, record(key, a, a + size, x), a + size - 1)
    else
      local one = inst.one
      one[1] = x
      call_window_fn(inst, key, nil, one, kid, a, a + size)
    end
  end

  -- the window's fire during push (a due window: allowed lateness)
  local function fire(inst, key, kid, a)
    local out = inst.g_out
    if C.weir_aggs_get(inst.cagg, inst.wtab, kid, a, out) == 0 then
      fire_value(inst, key, kid, a, out[2])
    end
  end

  -- the j-th window of a chunk of fires (weir_aggs_fire's results)
  local function fire_nth(inst, key, kid, a, j)
    return fire_value(inst, key, kid, a, inst.g_vals[j])
  end

  -- An element at or behind the watermark W it meets: after the batch, on its own (late, or
  -- into a window that may be due), as tumbling_push does it.
  local function one(inst, st, v, ts, key, kid, W)
    aggstate.cagg_sync(node, inst) -- the batch and its timers first: this one's come after
    local q = ts - (ts - offset) % size
    if cleanup_of(q + size - 1) <= W then
      return late(node, st, v, ts, key)
    end
    local x = value and value(v) or 0
    local id = C.weir_aggs_add(inst.cagg, inst.wtab, kid, q, x, inst.fresh1)
    if id < 0 then
      store_failed(id)
    end
    local fresh = inst.fresh1[0] == 1
    if trace then
      wc.trace_element(trace, key, ts)
    end
    local maxts = q + size - 1
    if maxts <= W then
      if guard then
        guard(fire, inst, key, kid, q)
      else
        fire(inst, key, kid, q)
      end
    elseif fresh then
      register(inst, maxts, kid, q)
    end
    if fresh and lateness > 0 then
      register(inst, cleanup_of(maxts), kid, q)
    end
  end

  return { fire = fire, fire_nth = fire_nth, fire_value = fire_value, one = one }
end

-- The per-element function: count has no value to read, so it has a prototype of its own.
local function cagg_push(node, intern, c)
  local instances, trace = node.instances, node.trace
  local value = node.user_fn.builtin.value
  local one, flush = c.one, aggstate.cagg_flush
  local BATCH = aggstate.BATCH
  if value == nil then
    return function(st, v, ts, key)
      local inst = instances[st + 1]
      inst.records = inst.records + 1
      if ts == nil or abs(ts) > MAX_TIME then
        no_timestamp(ts)
      end
      local kid = intern(inst, key)
      local W = inst.watermark
      if inst.floor_top > W then -- after a rescale: the key group's lateness floor
        W = floor_of(node, inst, key, W)
      end
      if ts <= W then
        return one(inst, st, v, ts, key, kid, W)
      end
      local b = inst.batch
      local n = b.n
      b.keys[n], b.ts[n] = kid, ts
      b.n = n + 1
      if n + 1 == BATCH then
        flush(node, inst)
      end
      if trace then
        wc.trace_element(trace, key, ts)
      end
    end
  end
  return function(st, v, ts, key)
    local inst = instances[st + 1]
    inst.records = inst.records + 1
    if ts == nil or abs(ts) > MAX_TIME then
      no_timestamp(ts)
    end
    local kid = intern(inst, key)
    local W = inst.watermark
    if inst.floor_top > W then
      W = floor_of(node, inst, key, W)
    end
    if ts <= W then
      return one(inst, st, v, ts, key, kid, W)
    end
    local x = value(v)
    local b = inst.batch
    local n = b.n
    b.keys[n], b.ts[n], b.x[n] = kid, ts, x
    b.n = n + 1
    if n + 1 == BATCH then
      flush(node, inst)
    end
    if trace then
      wc.trace_element(trace, key, ts)
    end
  end
end

-- WindowOperator.onEventTime for a built-in aggregate: the batch first, then per chunk of a
-- time's timers one C call reads the windows' results (and drops them when there is no
-- allowed lateness); Lua keeps only what has a Lua side: a rich clear(), window_state().
local function wire_cagg_watermark(node, guard, o, c)
  local size, lateness = node.assigner.size, node.lateness
  local clear = o.clear
  local rich_clear = node.rich and node.objs ~= nil
  local lua_clear = rich_clear or not node.builtin_out
  local fire_nth, fire_value = c.fire_nth, c.fire_value
  local CHUNK = chunk_of(1)
  local drop = lateness == 0 and 1 or 0
  node.on_watermark = function(inst, w)
    if inst.floors then
      pass_floors(inst, w)
    end
    aggstate.cagg_sync(node, inst)
    local q = inst.tq
    local times, buckets = q.times, q.buckets
    inst.firing = true
    while q.n > 0 and times[1] <= w do
      local t = times[1]
      local b = buckets[t]
      local a = t - size + 1 -- the window of the entries that fire at t
      while b.head <= b.len do
        local first = b.head
        local last = math.min(b.len, first + CHUNK - 1)
        local keys, m = inst.g_keys, 0
        for i = first, last do
          local e = b[i]
          if e > 0 then
            keys[m] = e
            m = m + 1
          end
        end
        C.weir_aggs_fire(inst.cagg, inst.wtab, keys, m, a, drop, inst.g_ids, inst.g_vals,
          inst.g_cnt)
        local vals, cnt = inst.g_vals, inst.g_cnt
        local j = 0
        for i = first, last do
          local e = b[i]
          b.head = i + 1
          q.count = q.count - 1
          if e > 0 then
            if cnt[j] > 0 then
              local key = key_of(inst, e)
              if guard then
                guard(fire_nth, inst, key, e, a, j)
              else
                fire_value(inst, key, e, a, vals[j])
              end
            end
            j = j + 1
            -- dropped in C already; a rich clear() and window_state() (which only a window
            -- function can make) are Lua's
            if lua_clear and lateness == 0 and (rich_clear or next(inst.wstate) ~= nil) then
              clear(inst, key_of(inst, e), e, a) -- its window is gone from wtab: a no-op there
            end
          else
            clear(inst, key_of(inst, -e), -e, t - lateness - size + 1)
          end
        end
      end
      timerq.pop(q)
    end
    inst.firing = false
  end
  return fire_nth
end

-- WindowOperator.onEventTime, over the timerq; fire_gathered returned (the error handler's).
local function wire_watermark(node, guard, o)
  local size, slide = node.assigner.size, node.assigner.slide
  local k = size / slide
  local lateness = node.lateness
  local create, merge -- sliced: always an aggregate
  if k > 1 then
    create, merge = node.user_fn.create, node.user_fn.merge
  end
  local fire_with, clear, clear_taken = o.fire_with, o.clear, o.clear_taken
  -- The accumulators of the m windows [a, a + size) of inst.g_keys[0 .. m), found in one C
  -- call per chunk of a watermark's fires, so that their cache misses overlap. gathered(inst,
  -- j) is then the j-th one's accumulator, or nil when it has none. Tumbling without allowed
  -- lateness, the same call drops the windows from wtab (their fire is their cleanup):
  -- clear_taken clears the rest after each fire.
  local CHUNK = chunk_of(k)
  local take = k == 1 and lateness == 0
  local function gather(inst, m, a)
    if take then
      C.weir_wintab_take(inst.wtab, inst.g_keys, m, a, inst.g_ids)
      inst.w_taken = m -- still open to the stats until each one's clear (aggstate.stats)
      return
    end
    if k == 1 then
      C.weir_wintab_gather(inst.wtab, inst.g_keys, m, a, inst.g_ids)
      return
    end
    local n = C.weir_slices_gather(inst.slices, inst.g_keys, m, a, a + size, inst.g_vals,
      inst.g_cap, inst.g_off, inst.g_ids)
    if n > inst.g_cap then
      inst.g_cap = n
      inst.g_vals = ffi.new("double[?]", n)
      C.weir_slices_gather(inst.slices, inst.g_keys, m, a, a + size, inst.g_vals, n, inst.g_off,
        inst.g_ids)
    end
  end
  local function gathered(inst, j)
    if k == 1 then
      local id = inst.g_ids[j]
      if id < 0 then
        return nil
      end
      return inst.accs[id]
    end
    local off = inst.g_off
    local from, to = off[j], off[j + 1]
    if from == to then
      return nil
    end
    local vals, acc = inst.g_vals, create()
    for x = from, to - 1 do
      acc = merge(acc, vals[x])
    end
    return acc
  end
  -- the j-th gathered window's fire: key and a are for the error handler while merge runs
  local function fire_gathered(inst, key, kid, a, j)
    return fire_with(inst, key, kid, a, gathered(inst, j))
  end

  -- WindowOperator.onEventTime: event_time() fires at the window's max timestamp; the window is
  -- cleared at its cleanup time (the same timer when there is no allowed lateness). The timers
  -- due go in (time, registration) order, a chunk of a time's entries at a time.
  node.on_watermark = function(inst, w)
    if inst.floors then
      pass_floors(inst, w)
    end
    local q = inst.tq
    local times, buckets = q.times, q.buckets
    inst.firing = true
    while q.n > 0 and times[1] <= w do
      local t = times[1]
      local b = buckets[t]
      local a = t - size + 1 -- the window of the entries that fire at t
      while b.head <= b.len do
        local first = b.head
        local last = math.min(b.len, first + CHUNK - 1)
        local keys, m = inst.g_keys, 0
        for i = first, last do
          local e = b[i]
          if e > 0 then
            keys[m] = e
            m = m + 1
          end
        end
        gather(inst, m, a)
        local j = 0
        for i = first, last do
          local e = b[i]
          b.head = i + 1
          q.count = q.count - 1
          if e > 0 then
            local key = key_of(inst, e)
            if guard then
              guard(fire_gathered, inst, key, e, a, j)
            else
              fire_gathered(inst, key, e, a, j)
            end
            if take then
              clear_taken(inst, key, e, a, inst.g_ids[j])
            elseif lateness == 0 then
              clear(inst, key, e, a)
            end
            j = j + 1
          else
            clear(inst, key_of(inst, -e), -e, t - lateness - size + 1)
          end
        end
        if take then
          C.weir_wintab_trim(inst.wtab)
        end
      end
      timerq.pop(q)
    end
    inst.firing = false
  end
  return fire_gathered
end

-- WindowOperator.onEventTime for sliced windows (k > 1): a chunk of a time's fires in one C
-- call (weir_slices_fire: per key two stacks of merged slices, about three merges per fire
-- whatever the window's length, and with no lateness the window's first slice dropped in the
-- same pass); the merges it asks for run here (merge is Lua), then the fires and clears in
-- (time, registration) order. fire_sliced returned (the error handler's).
local function wire_sliced_watermark(node, guard, o)
  local size, slide = node.assigner.size, node.assigner.slide
  local k = size / slide
  local lateness = node.lateness
  local merge = aggstate.merge_of(node)
  -- a built-in count, sum, min or max (weir.aggregates): its merges run in C, in the same order
  local builtin = node.fn_kind == "aggregate" and node.user_fn.builtin
  local c_merge = builtin and builtin.code <= aggregates.KINDS.max and builtin.code or nil
  local fire_with, clear, clear_dropped = o.fire_with, o.clear, o.clear_dropped
  local drop = lateness == 0 and 1 or 0
  local CHUNK = chunk_of(k)
  local band = bit.band
  local at = 0 -- the op running (a failing merge's)

  local function run_ops(ops, from, to)
    for x = from, to - 1 do
      at = x
      local op = ops[x]
      local r = op.r
      if r == nil then
        op.dst[0] = op.l[0]
      else
        op.dst[0] = merge(op.l[0], r[0])
      end
    end
  end
  -- the ops of the j-th fire from op x, window [a, a + size) of key: key and a are for the
  -- error handler (a merge that failed runs again here, to fail in a frame naming its window)
  local function run_key(inst, key, _, a, j, x) -- luacheck: ignore 212
    run_ops(inst.f_ops, x, inst.f_off[j + 1]) -- not a tail call: this frame names the window
  end
  -- the ops of the d fires just prepared, window [a, a + size); with on_error, a failing merge
  -- is its fire's error (raised when it fires, in order) and its key's queue is rebuilt at its
  -- next fire
  local function run_all(inst, d, a)
    local ops, off = inst.f_ops, inst.f_off
    if not guard then
      local from = 0
      while from < off[d] do
        if pcall(run_ops, ops, from, off[d]) then
          return
        end
        local j = 0
        while off[j + 1] <= at do
          j = j + 1
        end
        local kid = inst.g_keys[j]
        run_key(inst, key_of(inst, kid), kid, a, j, at) -- fails again, naming the window
        from = off[j + 1]
      end
      return
    end
    local from = 0
    while from < off[d] do
      local ok, err = pcall(run_ops, ops, from, off[d])
      if ok then
        return
      end
      local j = 0
      while off[j + 1] <= at do
        j = j + 1
      end
      inst.f_failed[j] = err
      C.weir_slices_forget(inst.slices, inst.g_keys[j])
      from = off[j + 1]
    end
  end
  local function fire_sliced(inst, key, kid, a, j)
    if guard then
      local err = inst.f_failed[j]
      if err ~= nil then
        inst.f_failed[j] = nil
        error(err, 0)
      end
    end
    if band(inst.f_flags[j], 1) ~= 0 then
      return fire_with(inst, key, kid, a, inst.f_res[j])
    end
  end

  node.on_watermark = function(inst, w)
    if inst.floors then
      pass_floors(inst, w)
    end
    local q = inst.tq
    local times, buckets = q.times, q.buckets
    local keys, flags = inst.g_keys, inst.f_flags
    inst.firing = true
    while q.n > 0 and times[1] <= w do
      local t = times[1]
      local b = buckets[t]
      local a = t - size + 1 -- the window of the entries that fire at t
      while b.head <= b.len do
        local first, last, m = b.head, b.head - 1, 0
        while last < b.len and m < CHUNK do
          last = last + 1
          local e = b[last]
          if e > 0 then
            keys[m] = e
            m = m + 1
          end
        end
        local d = 0
        if m > 0 then
          d = C.weir_slices_fire(inst.slices, keys, m, a, a + size, drop, inst.f_res, flags,
            inst.f_off, inst.f_ops, inst.f_cap, inst.g_ids)
          if d <= 0 then
            store_failed(d)
          end
          if c_merge then
            C.weir_slices_run_ops(c_merge, inst.f_ops, inst.f_off[d])
          else
            run_all(inst, d, a)
          end
        end
        local j = 0
        for i = first, last do
          local e = b[i]
          if e > 0 and j == d then
            break -- the next call's
          end
          b.head = i + 1
          q.count = q.count - 1
          if e > 0 then
            local key = key_of(inst, e)
            if guard then
              guard(fire_sliced, inst, key, e, a, j)
            else
              fire_sliced(inst, key, e, a, j)
            end
            if lateness == 0 then
              local f = flags[j]
              if f >= 2 then -- slice a dropped in C
                if f >= 4 then -- the key's last: its kept slice pointer goes too
                  inst.sl_start[e], inst.sl_cell[e], inst.sl_hits[e] = nil, nil, nil
                end
                clear_dropped(inst, key, e, a)
              else
                clear(inst, key, e, a)
              end
            end
            j = j + 1
          else
            clear(inst, key_of(inst, -e), -e, t - lateness - size + 1)
          end
        end
      end
      timerq.pop(q)
    end
    inst.firing = false
  end
  return fire_sliced, run_key
end

---Wires the window node (weir.windowing has the interface).
function M.instantiate(job, node)
  M.used = M.used + 1
  local size, slide = node.assigner.size, node.assigner.slide
  local k = size / slide -- slices per window
  wc.setup(job, node)
  local cagg = aggstate.cagg_kind(node)
  for _, inst in ipairs(node.instances) do
    aggstate.init(inst, k, cagg)
    wc.contexts(job, node, inst, aggstate)
    inst.records = 0
  end
  job.timer_nodes[#job.timer_nodes + 1] = node
  local call_window_fn = wc.caller(node)
  -- With on_error, each fire and clear() runs guarded (weir.windowop says how); nil without.
  local guard = job:fire_guard()
  local o = window_ops(node, guard, call_window_fn)
  local intern = aggstate.interner(node)
  local fire_gathered, run_key
  local fire, fire_with, rich_clear = o.fire, o.fire_with, o.rich_clear
  if cagg then
    local c = cagg_ops(node, guard, call_window_fn, o)
    node.push = cagg_push(node, intern, c)
    fire_gathered = wire_cagg_watermark(node, guard, o, c)
    fire, fire_with = c.fire, c.fire_value
  else
    node.push = k == 1 and tumbling_push(node, intern, o) or sliding_push(node, intern, o)
    if k == 1 then
      fire_gathered = wire_watermark(node, guard, o)
    else
      fire_gathered, run_key = wire_sliced_watermark(node, guard, o)
    end
  end
  node.on_processing_time = function() end

  -- for the error handler (weir.run, Failures): where a fire is, from these frames' arguments
  job.firers[node.on_watermark] = { node = node }
  job.places[call_window_fn] = { node = node, key = 2, win = 3, start = 6, stop = 7 }
  for _, f in ipairs({ fire, fire_with, fire_gathered, rich_clear, run_key or fire }) do
    job.places[f] = { node = node, key = 2, start = 4, size = size }
  end
  wc.user_places(job, node)
end

-- The face's interface (weir.windowing): the state's, weir.aggstate's -------------------------

M.stats = aggstate.stats

---The raw lists of one subtask by key id (weir.windowing.state turns them into keys).
function M.list(node, inst, keep, with_contents)
  local out = { windows = aggstate.windows(node, inst, keep, with_contents),
                timers = aggstate.timers(node, inst), gstate = inst.gstate }
  if node.assigner.size ~= node.assigner.slide then
    out.slices = aggstate.slices(node, inst, keep)
  end
  return out
end

---Processing-time timers: none (event-time windows only).
function M.last_processing_time()
  return -math.huge -- event time only: no processing-time timers
end

function M.next_processing_time()
  return INF
end

function M.key_of(_, inst, kid)
  return key_of(inst, kid)
end

return M
