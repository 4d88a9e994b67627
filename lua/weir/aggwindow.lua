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
--   reads the state; the windows a batch creates keep their timers in C, and without allowed
--   lateness a watermark's due windows are found there, in timer order, their results read
--   and the windows dropped in one C call per chunk (wire_cagg_watermark); without a window
--   function each fire emits its record (key, start, stop, value) straight from them. An
--   element at or behind the watermark (maybe late, maybe due) goes one at a time, after the
--   batch. On sliced windows a built-in count, sum, min or max batches its elements the same
--   way (weir_slices_apply, sliding_push's end), the timers of the windows they create
--   registered after each batch in the elements' order.
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
M.moves = 0 -- Lua-trigger nodes moved to the general operator (the tests read it)
M.batches = 0 -- batches of a sliced built-in aggregate applied in C (the tests read it)

-- resolved now: the first lookup of a C function inside a trace aborts it ("symbol not in cache")
local _, _, _, _ = C.weir_wintab_take, C.weir_wintab_trim, C.weir_slices_run_ops,
  C.weir_slices_running

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
    -- last_start[kid] may still say a (a test here would go the other way from the recorded
    -- trace for most windows: their key has no later window yet): the push sees that it is
    -- behind the watermark
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
  -- Upvalues the element path reads are assigned once and are never nil (false when absent):
  -- LuaJIT folds such an upvalue of a known closure into a constant (a number, a boolean, a
  -- function, a C function), where a nil one or one assigned twice is a load and a guard
  -- (~5 machine instructions) in the root trace's pre-loop part, which every new window's
  -- side trace re-enters, and in that side trace again ("The tumbling rows, seventh pass").
  local reduce = fn_kind == "reduce" and fn or false
  local create = not reduce and fn.create or false
  local add = not reduce and fn.add or false
  local trace = node.trace or false
  local wintab_add = C.weir_wintab_add
  local instances = node.instances
  local cleanup_of, register, fire_in_push = o.cleanup_of, o.register, o.fire_in_push
  -- A new window's slot at a job's start, through a caller that is never compiled (jit.off),
  -- as sliding_push's register_apart: while most elements open a window (every key's first),
  -- a root trace of the element path recorded there would make the steady path (the key's
  -- last window) a side trace of it, re-entering the root at its head every element; through
  -- here such a trace aborts, and the root trace is recorded on the steady path. Bounded
  -- (START_UP records, while about half of them or more open a window).
  local function open_apart(inst, kid, q)
    return wintab_add(inst.wtab, kid, q)
  end
  jit.off(open_apart)
  local by_st = {} -- the subtasks by st + 0.5 (the Lua-trigger push says why)
  for i, inst in ipairs(instances) do
    by_st[i - 0.5] = inst
  end
  -- one subtask: its instance is an upvalue, not a hash lookup (one = true folds to a
  -- constant; the pre-loop part each new window re-enters loses the lookup's ~10 instructions)
  local one = #instances == 1
  local inst1 = instances[1]
  -- and its arrays (aggstate.init empties them in place, never replaces them): four hash loads
  -- fewer in the pre-loop part
  local last_start1, last_id1, counts1, accs1 = inst1.last_start, inst1.last_id, inst1.counts,
    inst1.accs
  return function(st, v, ts, key)
    -- the arrays in locals here, before the branch below: the side trace of a new window (1
    -- element in 5 in windows_typed) inherits them from the root trace instead of looking them
    -- up again (last_id too: the root trace loads it for the key's last window anyway)
    local inst, last_start, last_id, counts, accs
    if one then
      inst, last_start, last_id, counts, accs = inst1, last_start1, last_id1, counts1, accs1
    else
      inst = by_st[st + 0.5]
      last_start, last_id, counts, accs = inst.last_start, inst.last_id, inst.counts, inst.accs
    end
    local r = inst.records + 1
    inst.records = r
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
    -- called (a C call also keeps the JIT from sinking the record); it is open, so not late. A
    -- window a watermark's fires took out of wtab (clear_taken) stays there: one whose max
    -- timestamp is behind W has fired, and its element takes the slow path.
    local q = last_start[kid]
    local slot
    if q ~= nil and ts >= q and ts < q + slide and q + size - 1 > W then
      slot = last_id[kid]
    else
      q = ts - (ts - offset) % slide -- the element's window
      if cleanup_of(q + size - 1) <= W then
        return late(node, st, v, ts, key) -- its window is late
      end
      if r <= START_UP and (inst.tb_apart + 1) * 2 > r then
        inst.tb_apart = inst.tb_apart + 1
        slot = open_apart(inst, kid, q)
      else
        slot = wintab_add(inst.wtab, kid, q)
      end
      if slot < 0 then
        store_failed(slot)
      end
      last_start[kid], last_id[kid] = q, slot
    end
    counts[slot] = (counts[slot] or 0) + 1
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
      timers_add(inst.tq, maxts, kid) -- register's (a finite max timestamp), without its tests
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
  local cleanup_of, fire_in_push = o.cleanup_of, o.fire_in_push
  local bucket_sized = timerq.bucket_sized
  local push_sliced

  -- o.register's timers (a key id at the window's max timestamp, a negated one at its cleanup
  -- time), appended to the time's bucket here: a new bucket is made with room for as many
  -- entries as the one made before it had (keys slide on together: about as many windows end
  -- at each time), not grown by doublings as it fills (~half of the append's cost); one that
  -- fills moves to one of twice the room (timerq.grow: the job's first buckets, made before
  -- there was another key). A bucket a restore made (timerq.add) says no room: it grows itself.
  local grow = timerq.grow
  -- A bucket with room for timer: t's first one (made), or a full one's (grown). Out of the
  -- traces (jit.off; once per time and subtask, or per doubling): a trace that records the
  -- making or the growing aborts, so the traces of the loops that register (register_loop:
  -- every key's first windows) are recorded where the bucket has room already, the common
  -- case. Recorded with either, every registration of a key's first windows after the first
  -- key's ran the loop's trace up to that branch, then a side trace of it.
  local function room(inst, q, t, b)
    if not b then
      local last = inst.sl_bucket
      b = bucket_sized(q, t, last and last.len or 0)
      inst.sl_bucket = b
    end
    if b.len < (b.cap or INF) then
      return b
    end
    local g = grow(q, t, b)
    if inst.sl_bucket == b then
      inst.sl_bucket = g
    end
    return g
  end
  jit.off(room)
  local function register(inst, t, kid, start)
    if t == INF then
      return
    end
    local e = kid
    if t ~= start + size - 1 then
      e = -kid
    end
    local q = inst.tq
    local b = q.buckets[t]
    if not b or b.len >= (b.cap or INF) then
      b = room(inst, q, t, b)
    end
    local n = b.len + 1
    b[n] = e
    b.len = n
    q.count = q.count + 1
  end
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
  -- The timers of the windows new slice q of kid creates, prev and next the starts of the key's
  -- slices around it (-inf / +inf: none); push_sliced's and the batch's (flush) one way.
  local function register_slice(inst, kid, q, W, prev, next)
    -- the common case, the key's previous slice just before this one: one new window, q's
    -- (not late: the push saw to it), without the loop
    if q - slide <= prev then
      if q + size - slide < next then
        local maxts = q + size - 1
        if maxts > W then
          register(inst, maxts, kid, q)
        end
        if lateness > 0 then
          register(inst, cleanup_of(maxts), kid, q)
        end
      end
      return
    end
    -- apart while the job starts: at most its first START_UP records, while about half of
    -- them or more needed this loop (every key's first slice); then the loop directly
    local r = inst.records
    if r <= START_UP and (inst.sl_apart + 1) * 2 > r then
      inst.sl_apart = inst.sl_apart + 1
      register_apart(inst, kid, q, W, prev, next)
    else
      register_loop(inst, kid, q, W, prev, next)
    end
  end

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
      register_slice(inst, kid, q, W, near[1], near[2])
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

  local skind = aggstate.sliced_kind(node)
  if not skind then
    return push_sliding
  end
  -- A built-in count, sum, min or max (weir.aggregates): an element on time whose slice is
  -- ahead of the watermark is only its (key id, slice, value) appended to the subtask's batch,
  -- which one C call applies (weir_slices_apply: the inserts' misses overlap); then the
  -- windows its new slices create get their timers here, in the elements' order (registering
  -- emits nothing and reads no slice, so this is the order push_sliced registers them in).
  -- An element at or behind the watermark goes one at a time, after the batch. The value is
  -- read first: a bad one fails before anything changes (as on tumbling windows, cagg_push).
  local value = node.user_fn.builtin.value
  local BATCH = aggstate.BATCH
  local flush_slices = aggstate.flush_slices
  local function flush(inst)
    local b = inst.sl_batch
    local n = b.n
    if n == 0 then
      return
    end
    b.n = 0
    M.batches = M.batches + 1
    if inst.sl_dirty then -- a kept pointer may move with the applies' rings
      inst.sl_dirty = false
      flush_slices(inst)
    end
    local m = C.weir_slices_apply(inst.slices, skind, n, b.keys, b.q, b.x, b.fresh, b.near)
    if m < 0 then
      error(m == C.WEIR_ESTATE and "window store: too many open slices"
        or ("window store: %s"):format(ffi.string(C.weir_strerror(m))), 0)
    end
    local W = b.w
    local fresh, near, keys, qs = b.fresh, b.near, b.keys, b.q
    -- register_slice's common case without lateness (the key's previous slice just before
    -- this one: one window, one timer at its max timestamp) appended to the time's bucket in
    -- runs, the bucket found once per run: a batch's new slices mostly share their start, so
    -- their windows' timers their time, and no bucket is popped during a flush. Every other
    -- slice goes through register_slice, in the same order.
    local tq, bt, bb, blen, added = inst.tq, nil, nil, 0, 0
    -- m + 1 trips, the last one empty: a watermark's flush, deep in the tick's trace, then
    -- always enters this loop's own trace, even when the batch opened no slice (m == 0); a
    -- zero-trip exit there would start a side trace with the whole tick's frames live, which
    -- LuaJIT cannot assemble ("NYI: register coalescing too complex", retried every tick).
    for j = 0, m do
      if j == m then
        break
      end
      local i = fresh[j]
      local kid, q = keys[i], qs[i]
      local prev, next = near[2 * j], near[2 * j + 1]
      local maxts = q + size - 1
      if lateness == 0 and q - slide <= prev and q + size - slide < next and maxts > W then
        if maxts ~= bt then
          if bb then
            bb.len = blen
          end
          bb = tq.buckets[maxts]
          if not bb then
            local last = inst.sl_bucket
            bb = bucket_sized(tq, maxts, last and last.len or 0)
            inst.sl_bucket = bb
          end
          bt, blen = maxts, bb.len
        end
        blen = blen + 1
        bb[blen] = kid
        added = added + 1
      else
        if bb then
          bb.len = blen
          bt, bb = nil, nil
        end
        register_slice(inst, kid, q, W, prev, next)
      end
    end
    if bb then
      bb.len = blen
    end
    tq.count = tq.count + added
  end
  node.sl_flush = flush
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
    local q = ts - (ts - offset) % slide
    if cleanup_of(q + size - 1) <= W then
      return late(node, st, v, ts, key) -- reads no state: the batch can wait
    end
    local b = inst.sl_batch
    local n = b.n
    if q + slide - 1 <= W then
      flush(inst)
      inst.sl_dirty = true
      return push_sliced(inst, ts, v, key, kid, q, W)
    end
    local x = 0
    if value then
      x = value(v)
    end
    if n > 0 and W ~= b.w then
      flush(inst)
      n = 0
    end
    b.w = W
    b.keys[n], b.q[n], b.x[n] = kid, q, x
    b.n = n + 1
    if n + 1 == BATCH then
      flush(inst)
    end
    if trace then
      wc.trace_element(trace, key, ts)
    end
  end
end

-- Built-in aggregates in C (tumbling) ----------------------------------------------------------

-- A fired window's result value: its record without a window function, else the function's
-- call with { value } (a list of the subtask's, reused: `elements` is read-only).
local function cagg_ops(node, guard, call_window_fn, o)
  local _, _ = C.weir_aggs_created_add, C.weir_aggs_due -- resolved now (as at the top)
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
    if C.weir_aggs_get(inst.cagg, kid, a, out) == 0 then
      fire_value(inst, key, kid, a, out[2])
    end
  end

  -- the j-th window of a chunk of fires (weir_aggs_fire's results)
  local function fire_nth(inst, key, kid, a, j)
    return fire_value(inst, key, kid, a, inst.g_vals[j])
  end

  -- An element at or behind the watermark W it meets: after the batch, on its own (late, or
  -- into a window that may be due), as tumbling_push does it.
  -- Without allowed lateness its window's timer joins the others in C (after them: it is
  -- registered after them), so that elements behind the watermark keep the watermark's fires
  -- in C; with it, the batch's timers go to the Lua queue first, then this one's.
  local function one(inst, st, v, ts, key, kid, W)
    local q = ts - (ts - offset) % size
    if cleanup_of(q + size - 1) <= W then
      return late(node, st, v, ts, key) -- reads no state: the batch can wait
    end
    local x = value and value(v) or 0
    if lateness > 0 then
      aggstate.cagg_sync(node, inst) -- the batch and its timers first: this one's come after
    else
      aggstate.cagg_flush(node, inst) -- the batch first (its window may be this one's)
    end
    local rc = C.weir_aggs_add(inst.cagg, kid, q, x, inst.fresh1)
    if rc < 0 then
      store_failed(rc)
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
    elseif fresh and lateness > 0 then
      register(inst, maxts, kid, q)
    elseif fresh then
      C.weir_aggs_created_add(inst.cagg, kid, q)
    end
    if fresh and lateness > 0 then
      register(inst, cleanup_of(maxts), kid, q)
    end
  end

  return { fire = fire, fire_nth = fire_nth, fire_value = fire_value, one = one }
end

-- The per-element function: count has no value to read, so it has a prototype of its own. It
-- counts no records (inst.records: only the sliced and the Lua-trigger paths read it).
local function cagg_push(node, intern, c)
  local instances, trace = node.instances, node.trace
  local value = node.user_fn.builtin.value
  local one, flush = c.one, aggstate.cagg_flush
  local BATCH = aggstate.BATCH
  if value == nil then
    return function(st, v, ts, key)
      local inst = instances[st + 1]
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

-- WindowOperator.onEventTime for a built-in aggregate: the batch first, then the due timers.
-- Without allowed lateness the windows the batches created keep their timers in C (aggs.c: in
-- creation order, each window's one timer at its max timestamp) and one C call per chunk takes
-- the due ones in timer order, drops their windows and returns their keys, starts and results:
-- Lua only emits. Any timer in the Lua queue (a reader of the state moved C's there,
-- weir.aggstate.cagg_sync, or a restore put it there) was registered before every one still in
-- C, so while the queue has timers it fires on its own, chunk by chunk as below, C's timers
-- moved over first. With allowed lateness every timer
-- (the fire's and the cleanup's) is in the queue. Lua keeps only what has a Lua side: a rich
-- clear(), window_state().
local function wire_cagg_watermark(node, guard, o, c)
  local size, lateness = node.assigner.size, node.lateness
  local clear = o.clear
  local rich_clear = node.rich and node.objs ~= nil
  local lua_clear = rich_clear or not node.builtin_out
  local fire_nth, fire_value = c.fire_nth, c.fire_value
  local CHUNK = chunk_of(1)
  local drop = lateness == 0 and 1 or 0
  local flush, sync = aggstate.cagg_flush, aggstate.cagg_sync

  -- The j-th window of a chunk C has just taken (key id e, start a, result x of n records):
  -- its record or window function, then what is Lua's to clear. C dropped it already; a rich
  -- clear() and window_state() (which only a window function can make) are Lua's.
  local function fired(inst, e, a, j, x, n)
    if n > 0 then
      local key = key_of(inst, e)
      if guard then
        guard(fire_nth, inst, key, e, a, j)
      else
        fire_value(inst, key, e, a, x)
      end
    end
    if lua_clear and lateness == 0 and (rich_clear or inst.ws_n > 0) then
      clear(inst, key_of(inst, e), e, a) -- its window is gone from wtab: a no-op there
    end
  end

  -- the timers of the Lua queue up to w (timerq's order)
  -- the chunk in progress, for failed(): how it was taken, its size, start and fire
  local chunk_how, chunk_m, chunk_a, chunk_j = false, 0, 0, 0
  local function fire_queued(inst, w)
    local q = inst.tq
    local times, buckets = q.times, q.buckets
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
        C.weir_aggs_fire(inst.cagg, keys, m, a, drop, inst.g_vals, inst.g_cnt)
        chunk_how, chunk_m, chunk_a = "queued", m, a
        local vals, cnt = inst.g_vals, inst.g_cnt
        local j = 0
        for i = first, last do
          local e = b[i]
          b.head = i + 1
          q.count = q.count - 1
          if e > 0 then
            chunk_j = j
            fired(inst, e, a, j, vals[j], cnt[j])
            j = j + 1
          else
            clear(inst, key_of(inst, -e), -e, t - lateness - size + 1)
          end
        end
      end
      timerq.pop(q)
    end
  end

  node.on_watermark = function(inst, w)
    if inst.floors then
      pass_floors(inst, w)
    end
    flush(node, inst)
    inst.firing = true
    local q = inst.tq
    while true do
      if lateness > 0 or q.count > 0 then
        sync(node, inst)
        fire_queued(inst, w)
        break
      end
      local m = C.weir_aggs_due(inst.cagg, size, w, CHUNK, inst.g_keys, inst.g_starts,
        inst.g_vals, inst.g_cnt)
      if m <= 0 then
        break
      end
      chunk_how, chunk_m = "due", m
      local keys, starts, vals, cnt = inst.g_keys, inst.g_starts, inst.g_vals, inst.g_cnt
      for j = 0, m - 1 do
        chunk_j = j
        fired(inst, keys[j], starts[j], j, vals[j], cnt[j]) -- lateness is 0 here
      end
    end
    chunk_how = false
    inst.firing = false
  end

  -- A fire that failed the job (no on_error) left the chunk's windows from the failing one
  -- on taken out of the table (C took them for the chunk): they go back, so that the state at
  -- the end is the general operator's: the failing window without its timer, the rest with
  -- theirs (the queue's still hold them; the windows C timed get theirs back).
  local function failed(inst)
    local how = chunk_how
    chunk_how = false
    if not how or (how == "queued" and drop == 0) then
      return
    end
    local keys, starts, vals, cnt = inst.g_keys, inst.g_starts, inst.g_vals, inst.g_cnt
    local avg = node.user_fn.builtin.kind == "avg"
    for x = chunk_j, chunk_m - 1 do
      local n = cnt[x]
      if n > 0 then
        local a = how == "due" and starts[x] or chunk_a
        -- the accumulator: the result, or for avg the sum (value = sum / n)
        C.weir_aggs_set(inst.cagg, keys[x], a, avg and vals[x] * n or vals[x], n)
        if how == "due" and x > chunk_j then
          C.weir_aggs_created_add(inst.cagg, keys[x], a)
        end
      end
    end
  end
  return fire_nth, failed
end

-- The on_watermark of the tumbling and sliced operators: sync(node, inst) first when given,
-- the lateness floors, then fire_due(inst, w) only when a timer is due. Most watermarks fire
-- nothing: a tick's trace runs through here to the operators downstream. One that fires leaves
-- that trace at the due test, deep in the tick's frames with many values live; a side trace
-- recorded from there into the fire loop could not take them over from its parent ("NYI:
-- register coalescing too complex", lj_asm.c asm_head_side), again at every later try. With
-- the loop in fire_due, the exit's side trace links to fire_due's own traces, and the loop's
-- exit back out of the watermark is a side trace of the loop's shallow trace (over the abort
-- matrix: tumbling_reduce's and tumbling_aggregate's ~30 aborts per run went to about 1).
local function due_watermark(node, fire_due, sync)
  return function(inst, w)
    if sync then
      sync(node, inst)
    end
    if inst.floors then
      pass_floors(inst, w)
    end
    local q = inst.tq
    if q.n > 0 and q.times[1] <= w then
      fire_due(inst, w)
    end
  end
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
  local taken_m, taken_a = 0, 0 -- the chunk take last took: its size and window start
  local function gather(inst, m, a)
    if take then
      C.weir_wintab_take(inst.wtab, inst.g_keys, m, a, inst.g_ids)
      inst.w_taken = m -- still open to the stats until each one's clear (aggstate.stats)
      taken_m, taken_a = m, a
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
  -- The watermark's fires, a function of its own (due_watermark says why).
  local function fire_due(inst, w)
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
        -- Taken windows, no on_error, every entry a window's (the common chunk): the chunk's
        -- timers leave the queue at once, b.head and q.count written once and not per window
        -- (~8 instructions a window); a fire that fails the job has failed() give the failing
        -- window's successors theirs back, as if taken one by one. Otherwise one by one.
        local at_once = take and not guard and m == last - first + 1
        if at_once then
          b.head = last + 1
          q.count = q.count - m
          inst.f_b, inst.f_first = b, first
        end
        local j = 0
        for i = first, last do
          local e = b[i]
          if not at_once then
            b.head = i + 1
            q.count = q.count - 1
          end
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
        if at_once then
          inst.f_b = false
        end
        if take then
          C.weir_wintab_trim(inst.wtab)
        end
      end
      timerq.pop(q)
    end
    inst.firing = false
  end
  node.on_watermark = due_watermark(node, fire_due)

  -- A fire that failed the job (no on_error) left the chunk's windows from the failing one
  -- on taken out of wtab: they go back (new ids, the same accumulators), so that the state at
  -- the end is the general operator's: the failing window without its timer, the rest with
  -- theirs (still in the queue).
  local function failed(inst)
    local n = inst.w_taken
    local fb = inst.f_b
    if fb then
      -- the chunk's timers were taken at once (at_once): the failing window's (the chunk's
      -- (taken_m - n + 1)-th) and those before it stay taken, the n - 1 after it go back
      inst.f_b = false
      if n > 0 then
        fb.head = inst.f_first + taken_m - n + 1
        inst.tq.count = inst.tq.count + n - 1
      end
    end
    if not take or n <= 0 then
      return
    end
    local back = {}
    for x = taken_m - n, taken_m - 1 do
      local id = inst.g_ids[x]
      if id >= 0 then
        back[#back + 1] = { inst.g_keys[x], inst.accs[id], inst.counts[id] }
        inst.accs[id], inst.counts[id] = nil, nil
      end
    end
    for _, w in ipairs(back) do
      local id = C.weir_wintab_add(inst.wtab, w[1], taken_a)
      if id >= 0 then
        inst.accs[id], inst.counts[id] = w[2], w[3]
      end
    end
    inst.w_taken = 0
  end
  return fire_gathered, failed
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
  -- count and sum: a running sum per key where it is exact (slices.c), no ops for those keys
  local running = (c_merge == aggregates.KINDS.count or c_merge == aggregates.KINDS.sum)
    and c_merge or -1
  local fire_with, clear, clear_dropped = o.fire_with, o.clear, o.clear_dropped
  local drop = lateness == 0 and 1 or 0
  local CHUNK = chunk_of(k)
  local band = bit.band
  local at = 0 -- the op running (a failing merge's)
  local firing_i = 0 -- the bucket entry whose fire runs (0: none yet in this chunk)
  local firing_j, chunk_d, chunk_a = 0, 0, 0 -- its index in the chunk; the chunk's fires, start

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

  local function fire_due(inst, w) -- (due_watermark says why a function)
    local q = inst.tq
    local times, buckets = q.times, q.buckets
    local keys, flags = inst.g_keys, inst.f_flags
    inst.firing = true
    if running >= 0 and q.n > 0 and times[1] <= w then
      -- said per watermark that fires: a restore makes the subtask's slices anew
      C.weir_slices_running(inst.slices, running)
    end
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
        firing_i = 0
        if m > 0 then
          d = C.weir_slices_fire(inst.slices, keys, m, a, a + size, drop, inst.f_res, flags,
            inst.f_off, inst.f_ops, inst.f_cap, inst.g_ids)
          if d <= 0 then
            store_failed(d)
          end
          chunk_d, chunk_a = d, a
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
            firing_i, firing_j = i, j
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
  -- a built-in aggregate's batch first: its slices and timers
  node.on_watermark = due_watermark(node, fire_due, aggstate.sl_sync)

  -- A fire that failed the job (no on_error): the windows at its time from the failing one on
  -- are still there (the failing one without its timer), those before it are not, which the
  -- watermark alone cannot say: aggstate.windows reads inst.failed_at (the time) and
  -- inst.failed_keys. The slices C dropped for the chunk's windows from the failing one on go
  -- back (weir_slices_undrop), the keys' kept slice pointers counted and forgotten (an undrop
  -- can move a ring).
  local function failed(inst)
    local q = inst.tq
    if q.n == 0 then
      return
    end
    if drop == 1 and chunk_d > 0 then
      local from = firing_i > 0 and firing_j or 0
      C.weir_slices_undrop(inst.slices, inst.g_keys, from, chunk_d, chunk_a)
      for x = from, chunk_d - 1 do -- their current slice's hits, by its start
        aggstate.flush_slice(inst, inst.g_keys[x])
      end
    end
    local t = q.times[1]
    local b = q.buckets[t]
    local fire, clean = {}, {} -- the keys whose fire, and whose cleanup, there is left
    for i = firing_i > 0 and firing_i or b.head, b.len do
      local e = b[i]
      if e > 0 then
        fire[e] = true
      end
      if e < 0 or lateness == 0 then
        clean[e < 0 and -e or e] = true
      end
    end
    inst.failed_at, inst.failed_keys = t, { fire = fire, clean = clean }
  end
  return fire_sliced, run_key, failed
end

-- A Lua trigger on tumbling windows ------------------------------------------------------------
-- A user trigger (weir.trigger{}, or one wrapping the built-ins) on event-time tumbling windows
-- without allowed lateness, reduce/aggregate without a rich function, runs here while what it
-- asks of its context is what the window's state already has: Flink's timer at the window's
-- max timestamp, which is also the window's cleanup timer. Per window (by its wtab id) beside
-- the accumulator, in one number (inst.tst[id], weir.aggstate says how): the place of its timer
-- in the timer queue (the index of its live entry in the bucket of its max timestamp) and
-- whether it has fired. The trigger gets a window object per call (equal, not the same:
-- docs/API.md), which is not allocated when it does not keep it; the window function none
-- unless it asks (ctx:window()), as on the other fast paths. A
-- registration of that timer is a no-op when it is registered (Flink's timer service is a
-- set), else an append; a delete leaves its entry as a tombstone (the place no longer says
-- it); after on_element the operator registers it (registerCleanupTimer). A watermark's fires
-- go in (time, registration) order: on_event_time, its FIRE/PURGE on the accumulator, then the
-- cleanup (the accumulator, the trigger's clear, the window), as WindowOperator.onEventTime.
-- While the queue holds no tombstone (inst.t_tombs counts them), a chunk's windows are taken
-- out of wtab in the call that finds them; a fired window's start stays in last_start (the
-- push checks it against the watermark), so the loop has no branch that varies per window.
-- Anything else the trigger asks (a timer at another time, processing time, ctx:state, a
-- registration after its window's timer fired) moves the node to the general operator there
-- and then, with its state (move below): the call goes on there, and so does the job.

-- The trigger's context is one table per node (an upvalue of its push and fire loop: no
-- lookup per call; a call of one subtask never runs inside another's, the graph has no cycle),
-- filled by field writes before each call, with its methods in it (no metatable: a method is
-- one lookup, a field write no guard), closures of the node (wire_triggered: the move's flag
-- is their upvalue). Its fields: inst, the call's subtask; node, job; kid, the window's key
-- id (its timer's entry; the key is key_of it); id, the window's id during on_element, -1
-- during on_event_time and the cleanup's clear (its timer has fired); maxts, the window's max
-- timestamp; wm, the watermark on_element sees (push has it), false while timers fire
-- (computed when asked); treg, whether the window's timer is registered (on_element: an open
-- window's is, from the element that made it on, so the push sets it without a lookup:
-- registering it again is this flag's test); moved, the general operator's context once the
-- node moved there, else false.
local Window = getmetatable(windows.window(0, 1)) -- a window object made inline (no call)
local add_at = timerq.add_at
local t_at, t_fired = aggstate.t_at, aggstate.t_fired

-- The accumulation of element v into window id (its count and accumulator, accs[id]): the
-- tumbling windows' element step (tumbling_push has it inline) as a function of the node, for
-- the Lua-trigger push.
local function accumulator(node)
  local reduce = node.fn_kind == "reduce" and node.user_fn or nil
  local create, add
  if not reduce then
    create, add = node.user_fn.create, node.user_fn.add
  end
  return function(inst, id, v)
    local counts, accs = inst.counts, inst.accs
    counts[id] = (counts[id] or 0) + 1
    local acc = accs[id]
    if reduce then
      if acc ~= nil then
        v = reduce(acc, v)
        if v == nil then
          reduce_nil()
        end
      end
      accs[id] = v
    else
      if acc == nil then
        acc = create()
        if acc == nil then
          aggregate_nil("create")
        end
      end
      acc = add(v, acc)
      if acc == nil then
        aggregate_nil("add")
      end
      accs[id] = acc
    end
  end
end

---Whether a node of this shape can run its Lua trigger here (weir.windowing.choose).
function M.triggered_shape(n)
  local a = n.assigner
  return a.is_event_time and not a.merging and not a.global and a.size == a.slide
    and not n.evictor and n.trigger.builtin == nil and not n.rich and n.lateness == 0
    and (n.fn_kind == "reduce" or n.fn_kind == "aggregate")
end

-- The plain values of a subtask's state (windows, live timers in pop order, window_state,
-- global_state), by key: what the general operator's state is made from (fill).
local function collect(node, inst)
  local size = node.assigner.size
  local out = { windows = {}, timers = {}, wstate = {}, gstate = {} }
  local e = ffi.new("double[2]")
  for i = 0, C.weir_wintab_capacity(inst.wtab) - 1 do
    local id = C.weir_wintab_at(inst.wtab, i, e)
    if id >= 0 then
      local kid, a = e[0], e[1]
      out.windows[#out.windows + 1] = { key = key_of(inst, kid), start = a,
        acc = inst.accs[id], count = inst.counts[id] or 0, fired = t_fired(inst, id) }
    end
  end
  local q, times = inst.tq, {}
  for i = 1, q.n do
    times[i] = q.times[i]
  end
  table.sort(times)
  for _, t in ipairs(times) do
    local b = q.buckets[t]
    for i = b.head, b.len do
      local kid, a = b[i], t - size + 1
      local id = C.weir_wintab_find(inst.wtab, kid, a)
      if id >= 0 and t_at(inst, id) == i then
        out.timers[#out.timers + 1] = { key = key_of(inst, kid), start = a }
      end
    end
  end
  local w = ffi.new("double[3]")
  for slot, st in pairs(inst.wstate) do
    if C.weir_store_window(inst.wstore, slot, w) == 0 then
      out.wstate[#out.wstate + 1] = { key = key_of(inst, w[0]), start = w[1], stop = w[2],
                                      state = st }
    end
  end
  for kid, g in pairs(inst.gstate) do
    out.gstate[#out.gstate + 1] = { key = key_of(inst, kid), state = g }
  end
  return out
end

-- The general operator's state (weir.winstate's pieces of g, made by winstate.init) from
-- collect's values: a window object is the one the trigger has seen.
local function fill(node, g, st)
  local size = node.assigner.size
  local intern = wc.interner(node.keyed)
  local function open(kid, a, stop)
    local slot = C.weir_store_slot(g.store, kid, a, stop)
    if not g.wins[slot] then
      g.wins[slot], g.wkid[slot] = windows.window(a, stop), kid
    end
    return slot
  end
  for _, x in ipairs(st.windows) do
    local kid = intern(g, x.key)
    local slot = open(kid, x.start, x.start + size)
    g.contents[slot] = x.acc
    if x.count ~= 0 then
      C.weir_store_count_add(g.store, slot, x.count)
    end
    if x.fired then
      g.fires[slot] = true
    end
  end
  for _, x in ipairs(st.timers) do
    C.weir_timers_register(g.timers, C.WEIR_TIME_EVENT, x.start + size - 1, intern(g, x.key),
      x.start, x.start + size)
  end
  for _, x in ipairs(st.wstate) do
    g.wstate[open(intern(g, x.key), x.start, x.stop)] = x.state
  end
  for _, x in ipairs(st.gstate) do
    g.gstate[intern(g, x.key)] = x.state
  end
end

-- a stand-in subtask of the general operator's state, and a node with them (checkpoints)
local function stand_in(inst)
  local sh = { index = inst.index, watermark = inst.watermark }
  require("weir.winstate").init(sh)
  return sh
end
local function stand_in_node(node, insts)
  return setmetatable({ instances = insts }, { __index = node })
end

-- Makes a subtask's pieces of this mode (aggstate.init made the rest): the per-window table
-- and the fire loop's.
local function init_triggered(inst)
  inst.tst = {}
  inst.t_tombs = 0 -- deleted timers' entries still in the queue
  -- a fire loop's taken chunk (untake): the entry at (false: none), its first and last, start
  inst.tk_at, inst.tk_first, inst.tk_last, inst.tk_a = false, 0, 0, 0
end

local function wire_triggered(job, node)
  local size, offset = node.assigner.size, node.assigner.offset
  local trigger = node.trigger
  local on_element, on_event_time, tclear = trigger.on_element, trigger.on_event_time,
    trigger.clear
  local reduce = node.fn_kind == "reduce" and node.user_fn or nil
  local result = not reduce and node.user_fn.result or nil
  local instances = node.instances
  local call_window_fn = wc.caller(node)
  local intern = aggstate.interner(node)
  local accumulate = accumulator(node)
  local check_result = wc.check_result
  local drop_window_state = aggstate.drop_window_state
  local CHUNK = chunk_of(1)
  local moved, general_push, gops = false, nil, nil

  -- A move during a fire loop's taken chunk (a trigger call at its entry inst.tk_at): the
  -- windows of that entry and the chunk's later live entries back into wtab under new ids (the
  -- take freed theirs), with their state, so that collect finds them.
  local function untake(inst)
    local a = inst.tk_a
    local b = inst.tq.buckets[a + size - 1]
    local ids, first = inst.g_ids, inst.tk_first
    local back = {}
    for i = inst.tk_at, inst.tk_last do
      local id = ids[i - first]
      if id >= 0 and (i == inst.tk_at or t_at(inst, id) == i) then
        back[#back + 1] = { kid = b[i], i = i, acc = inst.accs[id], count = inst.counts[id],
                            tst = inst.tst[id] }
        inst.accs[id], inst.counts[id], inst.tst[id] = nil, nil, nil
      end
    end
    for _, x in ipairs(back) do
      local id = C.weir_wintab_add(inst.wtab, x.kid, a)
      if id < 0 then
        store_failed(id)
      end
      inst.accs[id], inst.counts[id], inst.tst[id] = x.acc, x.count, x.tst
      if inst.last_start[x.kid] == a then
        inst.last_id[x.kid] = id
      end
    end
    inst.w_taken, inst.tk_at = 0, false
  end

  -- The move to the general operator, from a trigger call ctx is in (or from a restore, ctx
  -- nil): every subtask's state as plain values, the general operator wired (a new state for
  -- the same subtask tables), the state filled in, and ctx pointed at the general operator's
  -- context for its window, which the call goes on with.
  local function move(ctx, method, ...)
    M.moves = M.moves + 1
    local key = ctx ~= nil and key_of(ctx.inst, ctx.kid) -- by the fast operator's key ids
    local states, saved = {}, {}
    local dropped, first_late = node.late_dropped, node.first_late -- wc.setup resets them
    for i, inst in ipairs(instances) do
      if inst.tk_at then
        untake(inst)
      end
      states[i] = collect(node, inst)
      saved[i] = { inst.floors, inst.floor_top, inst.records }
    end
    for i, n in ipairs(job.timer_nodes) do
      if n == node then
        table.remove(job.timer_nodes, i)
        break
      end
    end
    local windowop = require("weir.windowop")
    node.window_op, node.lua_trigger = windowop, false
    local push = node.push
    windowop.instantiate(job, node)
    general_push, gops = node.push, node.general_ops
    node.late_dropped, node.first_late = dropped, first_late
    node.push, node.general_push = push, general_push -- the job's entry stays: it forwards
    for i, inst in ipairs(instances) do
      inst.floors, inst.floor_top, inst.records = saved[i][1], saved[i][2], saved[i][3]
      fill(node, inst, states[i])
    end
    moved = true
    if ctx == nil then
      return
    end
    local inst, a = ctx.inst, ctx.maxts - size + 1
    local gkid = wc.interner(node.keyed)(inst, key)
    local g = inst.tctx
    local slot = C.weir_store_find(inst.store, gkid, a, a + size)
    g.key, g.kid, g.slot = key, gkid, slot
    g.window = slot >= 0 and inst.wins[slot] or windows.window(a, a + size)
    ctx.moved = g
    return g[method](g, ...)
  end
  node.trig_move = move

  -- The context's methods. Once the node moved, the call that moved it goes on with the general
  -- operator's context (ctx.moved); no other call gets this context then.
  local function forward(ctx, method, ...)
    local g = ctx.moved
    if not g then
      error(("trigger %s: its context was used after the window operator moved to the general "
        .. "operator (a context is valid during its call only)"):format(trigger.name), 0)
    end
    return g[method](g, ...)
  end
  local m = {}
  function m.current_watermark(ctx)
    if moved then
      return forward(ctx, "current_watermark")
    end
    local w = ctx.wm
    if w then
      return w
    end
    local inst = ctx.inst
    w = inst.watermark
    if inst.floor_top > w then
      return floor_of(node, inst, key_of(inst, ctx.kid), w)
    end
    return w
  end
  function m.current_processing_time(ctx)
    if moved then
      return forward(ctx, "current_processing_time")
    end
    return job:now()
  end
  -- the window's timer during on_element: registered, a flag; else an append and its place
  function m.register_event_time_timer(ctx, t)
    if moved then
      return forward(ctx, "register_event_time_timer", t)
    end
    if t == ctx.maxts and ctx.id >= 0 then
      if not ctx.treg then
        local inst = ctx.inst
        local n, tst, id = add_at(inst.tq, t, ctx.kid), inst.tst, ctx.id
        tst[id] = tst[id] == 0 and -n or n -- fired early: it stays fired
        ctx.treg = true
      end
      return
    end
    return move(ctx, "register_event_time_timer", t)
  end
  function m.delete_event_time_timer(ctx, t)
    if moved then
      return forward(ctx, "delete_event_time_timer", t)
    end
    if t == ctx.maxts then
      if ctx.id >= 0 and ctx.treg then -- its entry stays, a tombstone
        local inst = ctx.inst
        local tst, id = inst.tst, ctx.id
        tst[id] = tst[id] < 0 and 0 or nil
        inst.tq.count = inst.tq.count - 1
        inst.t_tombs = inst.t_tombs + 1
        ctx.treg = false
      end
      return -- from on_event_time or clear: the timer has fired, it is gone already
    end
    return move(ctx, "delete_event_time_timer", t)
  end
  for _, name in ipairs({ "register_processing_time_timer", "delete_processing_time_timer",
                          "state", "merge_state" }) do
    m[name] = function(ctx, ...)
      if moved then
        return forward(ctx, name, ...)
      end
      return move(ctx, name, ...)
    end
  end
  -- The context, one for the node (an upvalue: no lookup per call), with its methods in it;
  -- a call's subtask is its field inst.
  local tctx = { inst = false, node = node, job = job, kid = -1, id = -1, maxts = 0, wm = false,
                 treg = false, moved = false }
  for name, f in pairs(m) do
    tctx[name] = f
  end

  -- no window object: the function's context makes one if asked (wincontext.caller). A fire
  -- from on_element keeps the window's timer (its place, negated: fired); fire_timed's window
  -- has none (its timer has just fired)
  local function fire_with(inst, key, kid, a, acc)
    local one = inst.one
    if reduce then
      one[1] = acc
    else
      one[1] = result(acc)
    end
    call_window_fn(inst, key, nil, one, kid, a, a + size)
  end
  local function fire(inst, key, kid, a, id)
    local acc = inst.accs[id]
    if acc == nil then
      return
    end
    local tst = inst.tst
    local p = tst[id]
    if p == nil then
      tst[id] = 0
    elseif p > 0 then
      tst[id] = -p
    end
    fire_with(inst, key, kid, a, acc)
  end
  local function fire_timed(inst, key, kid, a, id)
    local acc = inst.accs[id]
    if acc == nil then
      return
    end
    inst.tst[id] = 0
    fire_with(inst, key, kid, a, acc)
  end

  -- on_element moved the node: the rest of its element on the general operator
  local function element_moved(inst, key, r)
    local g = inst.tctx
    r = check_result(node, r, "on_element")
    gops.apply_result(inst, r, g.slot, key, g.kid, g.window)
    gops.register_cleanup(inst, g.kid, g.window, g.slot)
  end

  -- A new window's row at a job's start through a caller that is never compiled, as
  -- tumbling_push's open_apart (see there): the root trace of the element path is then
  -- recorded on the steady path (the key's last window), not on a window's opening.
  local function open_apart(inst, kid, q)
    return C.weir_wintab_add(inst.wtab, kid, q)
  end
  jit.off(open_apart)

  -- the subtasks by st + 0.5: keys in the hash part (small whole numbers would be an array
  -- part, whose bound check and guards cost the trace more than a hash slot's key check)
  local by_st = {}
  for i, inst in ipairs(instances) do
    by_st[i - 0.5] = inst
  end
  node.push = function(st, v, ts, key)
    if moved then
      return general_push(st, v, ts, key)
    end
    local inst = by_st[st + 0.5]
    local n = inst.records + 1
    inst.records = n
    if ts == nil or abs(ts) > MAX_TIME then
      no_timestamp(ts)
    end
    local kid = intern(inst, key)
    local W = inst.watermark
    if inst.floor_top > W then
      W = floor_of(node, inst, key, W)
    end
    -- the key's last window, when it is still open: the fire loop leaves a fired window's start
    -- in last_start (a branch there per window would leave its trace), so one behind W is gone
    local q = inst.last_start[kid]
    local id
    local treg = true -- an open window's timer is registered (the element that made it did)
    if q ~= nil and ts >= q and ts < q + size and q + size - 1 > W then
      id = inst.last_id[kid]
    else
      q = ts - (ts - offset) % size
      if q + size - 1 <= W then
        return late(node, st, v, ts, key)
      end
      if n <= START_UP and (inst.tb_apart + 1) * 2 > n then
        inst.tb_apart = inst.tb_apart + 1
        id = open_apart(inst, kid, q)
      else
        id = C.weir_wintab_add(inst.wtab, kid, q)
      end
      if id < 0 then
        store_failed(id)
      end
      inst.last_start[kid], inst.last_id[kid] = q, id
      treg = (inst.tst[id] or 0) ~= 0 -- false: a new window (one found again keeps its timer)
    end
    accumulate(inst, id, v)
    -- a window object per call (Windows compare by value, docs/API.md): one that the trigger
    -- does not keep is never allocated (the JIT sinks it)
    local w = setmetatable({ start = q, stop = q + size }, Window)
    local ctx = tctx
    local maxts = q + size - 1
    ctx.inst, ctx.kid, ctx.id, ctx.maxts, ctx.wm, ctx.treg = inst, kid, id, maxts, W, treg
    local r = on_element(trigger, v, ts, w, ctx)
    if moved then
      return element_moved(inst, key, r)
    end
    if r ~= 0 then
      if r ~= 1 then -- FIRE is valid: no lookup
        r = check_result(node, r, "on_element")
      end
      if r == 1 or r == 3 then
        fire(inst, key, kid, q, id)
      end
      if r >= 2 then
        inst.accs[id], inst.counts[id] = nil, nil
      end
    end
    if not ctx.treg then -- WindowOperator.registerCleanupTimer
      local at, tst = add_at(inst.tq, maxts, kid), inst.tst
      tst[id] = tst[id] == 0 and -at or at
    end
  end

  -- on_event_time or clear moved the node: the rest of the timer's work there, then the rest
  -- of the watermark's timers
  local function timer_moved(inst, w, key, r, a)
    local g = inst.tctx
    r = check_result(node, r, "on_event_time")
    gops.apply_result(inst, r, g.slot, key, g.kid, g.window)
    gops.cleanup(inst, key, g.kid, g.window, a, a + size, g.slot >= 0 and g.slot or nil)
    inst.firing = false
    return node.on_watermark(inst, w)
  end
  local function clear_moved(inst, w)
    local g = inst.tctx
    wc.check_cleared(g)
    if g.slot >= 0 then
      require("weir.winstate").drop_at(inst, g.slot)
    end
    inst.firing = false
    return node.on_watermark(inst, w)
  end

  -- WindowOperator.onEventTime over the timerq, a chunk of a time's entries at a time (their
  -- windows' ids found in one C call); a tombstone's entry is skipped. The context's id and wm
  -- are the same for every timer (-1: fired; false: the watermark computed when asked), its
  -- maxts for every timer of one time. Entered only when a timer is due (due_watermark says
  -- why a function of its own).
  local function fire_due(inst, w)
    local q = inst.tq
    local times, buckets = q.times, q.buckets
    local ctx = tctx
    inst.firing = true
    ctx.inst, ctx.id, ctx.wm = inst, -1, false
    while q.n > 0 and times[1] <= w do
      local t = times[1]
      local b = buckets[t]
      local a = t - size + 1
      ctx.maxts = t
      while b.head <= b.len do
        local first = b.head
        local last = math.min(b.len, first + CHUNK - 1)
        local keys = inst.g_keys
        for i = first, last do
          keys[i - first] = b[i]
        end
        -- no tombstone in the queue: every entry is its window's live timer, and the chunk's
        -- windows are taken out of wtab with their ids in the same call (their fire is their
        -- cleanup; a move meanwhile puts the rest back: untake)
        local take = inst.t_tombs == 0
        if take then
          C.weir_wintab_take(inst.wtab, keys, last - first + 1, a, inst.g_ids)
          inst.w_taken = last - first + 1 -- open to the stats until each one's cleanup
          inst.tk_first, inst.tk_last, inst.tk_a = first, last, a
        else
          C.weir_wintab_gather(inst.wtab, keys, last - first + 1, a, inst.g_ids)
        end
        local ids, tst = inst.g_ids, inst.tst
        for i = first, last do
          b.head = i + 1
          local id = ids[i - first]
          local p = tst[id]
          if id >= 0 and (p == i or p == -i) then
            -- popped: its entry is behind b.head now (tst[id] still says the place, which
            -- nothing reads behind the head; the cleanup below clears it)
            local kid = b[i]
            q.count = q.count - 1
            local key = key_of(inst, kid)
            local win = setmetatable({ start = a, stop = a + size }, Window) -- per call
            ctx.kid = kid
            if take then
              inst.tk_at = i
            end
            local r = on_event_time(trigger, t, win, ctx)
            if moved then
              return timer_moved(inst, w, key, r, a)
            end
            if r ~= 0 then
              if r ~= 1 then
                r = check_result(node, r, "on_event_time")
              end
              if r == 1 or r == 3 then
                fire_timed(inst, key, kid, a, id)
              end
            end
            -- the cleanup (this timer is the window's cleanup time): its contents, the
            -- trigger's clear, the window (aggstate.drop's steps: its row, the key's last
            -- window, its window_state)
            inst.accs[id], inst.counts[id] = nil, nil
            tclear(trigger, win, ctx)
            if moved then
              return clear_moved(inst, w)
            end
            tst[id] = nil
            if take then
              inst.w_taken = inst.w_taken - 1
            else
              C.weir_wintab_drop(inst.wtab, kid, a)
            end
            -- last_start[kid] may still say a: the push sees that it is behind the watermark
            drop_window_state(inst, kid, a, size)
          else -- a tombstone (a deleted timer: only the gather finds them)
            inst.t_tombs = inst.t_tombs - 1
          end
        end
        if take then
          inst.tk_at = false
          C.weir_wintab_trim(inst.wtab)
        end
      end
      timerq.pop(q)
    end
    inst.firing = false
  end
  node.on_watermark = due_watermark(node, fire_due)

  job.firers[node.on_watermark] = { node = node }
  job.places[call_window_fn] = { node = node, key = 2, win = 3, start = 6, stop = 7 }
  for _, f in ipairs({ fire, fire_timed, fire_with }) do
    job.places[f] = { node = node, key = 2, start = 4, size = size }
  end
end

---A Lua-trigger node's checkpoint sections: the general operator's (weir.winckpt's "general"
---sections, made from a stand-in of its state), so a checkpoint restores on either operator.
function M.snapshot(node, what)
  local insts = {}
  for i, inst in ipairs(node.instances) do
    insts[i] = stand_in(inst)
    fill(node, insts[i], collect(node, inst))
  end
  return require("weir.winckpt").snapshot(stand_in_node(node, insts), "general", what)
end

---Restores general sections into a Lua-trigger node's fresh subtasks: here when every window
---has its one timer, at its max timestamp, and no trigger state; else the node moves to the
---general operator first and they restore there.
function M.restore(job, node, groups)
  local winckpt, winstate = require("weir.winckpt"), require("weir.winstate")
  local size = node.assigner.size
  local insts = {}
  for i, inst in ipairs(node.instances) do
    insts[i] = stand_in(inst)
  end
  winckpt.restore(job, stand_in_node(node, insts), "general", groups)
  local all = function() return true end
  local fits = true
  local lists = {}
  for i, sh in ipairs(insts) do
    local ws, ts = winstate.windows(node, sh, all, true), winstate.timers(sh)
    lists[i] = { ws, ts }
    local per = {}
    for _, x in ipairs(ws) do
      if x.trigger_state and next(x.trigger_state) ~= nil then
        fits = false
      end
      per[x.kid .. " " .. x.start] = 0
    end
    for _, t in ipairs(ts) do
      local k = t.kid .. " " .. t.start
      if t.domain ~= "event" or t.time ~= t.start + size - 1 or t.stop ~= t.start + size
          or per[k] ~= 0 then
        fits = false
      else
        per[k] = 1
      end
    end
    for _, n in pairs(per) do
      if n ~= 1 then
        fits = false
      end
    end
  end
  if not fits then
    node.trig_move(nil)
    return winckpt.restore(job, node, "general", groups)
  end
  local intern = aggstate.interner(node)
  for i, inst in ipairs(node.instances) do
    local sh = insts[i]
    local ws, ts = lists[i][1], lists[i][2]
    for _, x in ipairs(ws) do
      local kid = intern(inst, sh.keys[x.kid])
      local id = C.weir_wintab_add(inst.wtab, kid, x.start)
      if id < 0 then
        store_failed(id)
      end
      inst.accs[id], inst.counts[id] = x.contents, x.count ~= 0 and x.count or nil
      if x.fired then
        inst.tst[id] = 0
      end
      if x.window_state ~= nil then
        inst.wstate[C.weir_store_slot(inst.wstore, kid, x.start, x.stop)] = x.window_state
      end
    end
    for _, t in ipairs(ts) do
      local kid = intern(inst, sh.keys[t.kid])
      local id = C.weir_wintab_find(inst.wtab, kid, t.start)
      local n, tst = add_at(inst.tq, t.time, kid), inst.tst
      tst[id] = tst[id] == 0 and -n or n
    end
    for kid, g in pairs(sh.gstate) do
      inst.gstate[intern(inst, sh.keys[kid])] = g
    end
  end
end

---Makes a Lua-trigger node's subtasks' state fresh (the round-trip mode).
function M.reset(_, node)
  for _, inst in ipairs(node.instances) do
    aggstate.init(inst, 1, nil)
    init_triggered(inst)
  end
end

-- node.watermark_lowered (weir.windowing): the watermark of inst went down (weir.scaleout). A
-- tumbling push trusts a key's last window while its max timestamp is ahead of the watermark
-- (a fire leaves the start of the window it took there): forgotten, so that a window fired and
-- gone is looked up (and opened) again.
local function forget_last_windows(inst)
  if inst.last_start then
    aggstate.emptied(inst.last_start) -- in place: tumbling_push may hold it (one subtask)
  end
end

---Wires the window node (weir.windowing has the interface).
function M.instantiate(job, node)
  M.used = M.used + 1
  local size, slide = node.assigner.size, node.assigner.slide
  local k = size / slide -- slices per window
  wc.setup(job, node)
  node.watermark_lowered = forget_last_windows
  local cagg = aggstate.cagg_kind(node)
  for _, inst in ipairs(node.instances) do
    aggstate.init(inst, k, cagg, aggstate.sliced_kind(node))
    wc.contexts(job, node, inst, aggstate)
    inst.records = 0
  end
  job.timer_nodes[#job.timer_nodes + 1] = node
  if node.lua_trigger then
    wire_triggered(job, node)
    for _, inst in ipairs(node.instances) do
      init_triggered(inst)
    end
    node.on_processing_time = function() end
    wc.user_places(job, node)
    return
  end
  local call_window_fn = wc.caller(node)
  -- With on_error, each fire and clear() runs guarded (weir.windowop says how); nil without.
  local guard = job:fire_guard()
  local o = window_ops(node, guard, call_window_fn)
  local intern = aggstate.interner(node)
  local fire_gathered, run_key, failed
  local fire, fire_with, rich_clear = o.fire, o.fire_with, o.rich_clear
  if cagg then
    local c = cagg_ops(node, guard, call_window_fn, o)
    node.push = cagg_push(node, intern, c)
    fire_gathered, failed = wire_cagg_watermark(node, guard, o, c)
    fire, fire_with = c.fire, c.fire_value
  else
    node.push = k == 1 and tumbling_push(node, intern, o) or sliding_push(node, intern, o)
    if k == 1 then
      fire_gathered, failed = wire_watermark(node, guard, o)
    else
      fire_gathered, run_key, failed = wire_sliced_watermark(node, guard, o)
    end
  end
  node.on_processing_time = function() end
  if failed and not guard then
    -- Without on_error a failing fire fails the job, out of a chunk of fires that took its
    -- windows from the table: failed() puts back what the chunk had not cleared, for the
    -- subtask that was firing, once the failure has left the job's worker (Job:on_failure).
    job:on_failure(function()
      for _, inst in ipairs(node.instances) do
        if inst.firing then
          inst.firing = false
          failed(inst)
        end
      end
    end)
  end

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
