-- weir.aggstate: the one home of the fast window operator's (weir.aggwindow) state, per
-- subtask: it defines every piece, makes them all at instantiate (M.init), is the only code
-- that drops a window (M.drop; the per-element functions of weir.aggwindow create them inline,
-- for the JIT), and lists them as plain values for the window layer's face
-- (weir.windowing.state): checkpoints and the inspectors read them there.
--
-- The pieces (fields of the subtask table: one hash load for the traces):
--   tumbling (k = 1 slice per window):
--     inst.wtab             wintab.c: (key id, start) -> window id
--     inst.accs[id], inst.counts[id]   the accumulator and element count of a window
--     inst.last_start[kid], inst.last_id[kid]   each key's last window (a cache of wtab; a
--                           window a fire took stays there: trusted while its max timestamp
--                           is ahead of the watermark, forgotten when the watermark goes down)
--   sliced (k > 1):
--     inst.slices           slices.c: per (key id, slide-long slice) a number accumulator and
--                           its element count
--     inst.sl_start/sl_cell/sl_hits[kid]   each key's current slice: start, accumulator
--                           pointer (its address as a number: no boxed cdata), elements
--                           added through it not yet counted in C
--   tumbling with a built-in aggregate (weir.aggregates; M.cagg_kind):
--     inst.cagg             aggs.c: the windows (key id, start) in a table of its own, with
--                           their accumulators (inst.wtab is false; inst.accs and inst.counts
--                           stay empty); listed by weir_aggs_capacity/weir_aggs_at
--     inst.batch            the elements not yet applied in C: keys/ts/x[0 .. n) (key id,
--                           timestamp, value); M.cagg_flush applies it, the windows
--                           it creates keep their timers in C (weir_aggs_created), where a
--                           watermark without allowed lateness fires them (weir_aggs_due)
--                           until M.cagg_sync moves them into inst.tq; every reader of the
--                           state syncs first
--     inst.g_vals, inst.g_cnt, inst.g_starts   a chunk of fires' results, counts and
--                           window starts
--   both:
--     inst.one              a fire's one-element list for the window function (reused)
--     inst.wstore, inst.wstate[slot]   window_state(): a store of its own (no cells), so that
--                           a key's slices stay alone in theirs; inst.ws_n counts its entries
--     inst.gstate[kid]      global_state()
--     inst.tq               weir.timerq: per time a FIFO of key ids (a key id: the timer at the
--                           window's max timestamp; a negated one: at its cleanup time)
--     inst.keys, inst.key_ids   interned keys (whole-number keys are their own id + 1)
local ffi = require("ffi")
local C = require("weir.ffi")
local wc = require("weir.wincontext")
local timerq = require("weir.timerq")
local tclear = require("table.clear")

local M = {}

local INF = math.huge
-- type as an upvalue: a global's lookup is a hash load and guards in the element path's trace
-- (re-run each time a side trace re-enters the root trace at its head, once per new window)
local floor, type = math.floor, type
local DIRECT = 2 ^ 30 -- key ids below are whole-number keys + 1, from it interned keys
M.DIRECT = DIRECT

-- The chunk of a watermark's fires whose state one C call gathers (k slices per window).
function M.chunk_of(k)
  return k == 1 and 4096 or math.max(1, math.min(4096, math.floor(2 ^ 20 / k)))
end

-- Elements per batch of a built-in aggregate (one C call applies them).
local BATCH = 512
M.BATCH = BATCH
local BATCH_T = ffi.typeof(("struct { int32_t n; int32_t keys[%d]; double ts[%d]; double x[%d]; }")
  :format(BATCH, BATCH, BATCH))

---The WEIR_AGG_* kind of a node whose windows a built-in aggregate computes in C (tumbling
---windows, weir.aggregates), or nil.
function M.cagg_kind(node)
  local a = node.assigner
  if node.lua_trigger then
    return nil -- its trigger decides the fires: the accumulators are Lua's
  end
  if a.size ~= a.slide or node.fn_kind ~= "aggregate" or not node.user_fn.builtin then
    return nil
  end
  return node.user_fn.builtin.code
end

---The WEIR_AGG_* kind of a sliced node (k > 1) whose elements a built-in count, sum, min or
---max applies in C in batches (weir_slices_apply), or nil.
function M.sliced_kind(node)
  local a = node.assigner
  if node.lua_trigger or a.size == a.slide or node.fn_kind ~= "aggregate"
      or not node.user_fn.builtin or node.user_fn.builtin.code > C.WEIR_AGG_MAX then
    return nil
  end
  return node.user_fn.builtin.code
end

-- A sliced built-in aggregate's batch: per element its key id, slice start and value (w: the
-- watermark its elements met); per new slice (fresh[j]: the element) its neighbours' starts.
local SBATCH_T = ffi.typeof(("struct { int32_t n; double w; int32_t keys[%d]; double q[%d]; "
  .. "double x[%d]; int32_t fresh[%d]; double near[%d]; }")
  :format(BATCH, BATCH, BATCH, BATCH, 2 * BATCH))

---t emptied in place, or a new table when t is absent.
function M.emptied(t)
  if type(t) == "table" then
    tclear(t)
    return t
  end
  return {}
end

---Makes every piece of a subtask's state for a node of k slices per window, and the buffers
---of its C calls; cagg: the WEIR_AGG_* kind of a built-in aggregate in C (M.cagg_kind), or nil;
---skind: a sliced node's (M.sliced_kind), or nil.
function M.init(inst, k, cagg, skind)
  inst.cagg = false
  if cagg then
    local a = C.weir_aggs_new(cagg)
    assert(a ~= nil, "weir_aggs_new: bad kind")
    inst.cagg = ffi.gc(a, C.weir_aggs_free)
    -- one cdata: the per-element path loads one field of the subtask, not four
    inst.batch = ffi.new(BATCH_T)
    inst.fresh1 = ffi.new("int32_t[1]")
    inst.c_keys = ffi.new("const int32_t *[1]")
    inst.c_starts = ffi.new("const double *[1]")
    inst.g_out = ffi.new("double[3]")
  end
  inst.one = { 0 } -- a fire's one-element list for the window function (reused, read-only)
  inst.w_taken = 0 -- tumbling: windows a chunk of fires took out of wtab, not yet cleared
  -- sliced: the time of a fire that failed the job, and the keys whose windows there were left
  inst.failed_at, inst.failed_keys = false, false
  -- a Lua trigger's (weir.aggwindow, "A Lua trigger"): per window id its timer's place in the
  -- queue and whether it fired, in one number (M.t_at, M.t_fired); a table there, else false
  inst.tst = false
  if k == 1 then
    inst.wtab = false -- a built-in aggregate's windows are its own (aggs.c)
    if not cagg then
      inst.wtab = ffi.gc(C.weir_wintab_new(), C.weir_wintab_free)
    end
    inst.tb_apart = 0 -- windows the job's start opened apart (weir.aggwindow, tumbling_push)
  else
    inst.slices = ffi.gc(C.weir_slices_new(), C.weir_slices_free)
    C.weir_slices_span(inst.slices, k) -- rings of k + 1 (slices.c: an insert beside the fire)
    inst.sl_start, inst.sl_cell, inst.sl_hits = {}, {}, {}
    inst.sl_apart = 0 -- slices whose windows the job's start registered apart (weir.aggwindow)
    inst.sl_bucket = false -- the timer bucket its slices' windows last made (weir.aggwindow)
    -- a built-in aggregate's elements not yet applied (M.sliced_kind; weir.aggwindow's
    -- node.sl_flush applies them), and whether sl_start may hold a key (set by the elements
    -- that went one at a time: the batch's applies move rings, so it is flushed first)
    inst.sl_batch = skind and ffi.new(SBATCH_T) or false
    inst.sl_dirty = false
    inst.fresh = ffi.new("int32_t[1]")
    -- a new slice's (fresh, previous start, next start); a watermark's fires (slices.c,
    -- weir_slices_fire): per fire its accumulator and flags, per key its ops' offsets, the ops
    local chunk = M.chunk_of(k)
    inst.near = ffi.new("double[3]")
    inst.f_res = ffi.new("double[?]", chunk)
    inst.f_flags = ffi.new("int32_t[?]", chunk)
    inst.f_off = ffi.new("int32_t[?]", chunk + 1)
    inst.f_cap = math.max(4 * chunk, k + 2)
    inst.f_ops = ffi.new("weir_slices_op_t[?]", inst.f_cap)
    inst.f_failed = {} -- per fire of the last batch whose merges failed, the error (on_error)
  end
  inst.wstore = ffi.gc(C.weir_store_new(0), C.weir_store_free)
  inst.tq = timerq.new()
  inst.key_ids, inst.keys = {}, {}
  -- accs, counts, last_start and last_id are emptied in place when the subtask had them (a
  -- reset, a restore): a one-subtask tumbling push holds them as upvalues (weir.aggwindow,
  -- tumbling_push), which LuaJIT folds to constants
  inst.accs = M.emptied(inst.accs)
  inst.wstate, inst.gstate = {}, {}
  -- window_state()s made (at most: a count, not the size of wstate), so that a window's drop
  -- skips the lookup without one; every new entry of wstate counts (its metatable), whoever
  -- writes it (window_state, the restores); M.drop_window_state counts the ones it drops
  inst.ws_n = 0
  setmetatable(inst.wstate, { __newindex = function(t, slot, s)
    rawset(t, slot, s)
    inst.ws_n = inst.ws_n + 1
  end })
  inst.counts, inst.last_start = M.emptied(inst.counts), M.emptied(inst.last_start)
  inst.last_id = M.emptied(inst.last_id)
  inst.cells_cap = 64
  inst.cells = ffi.new("double[?]", inst.cells_cap)
  inst.nb = ffi.new("double[2]")
  local chunk = M.chunk_of(k)
  inst.g_keys = ffi.new("int32_t[?]", chunk)
  inst.g_ids = ffi.new("int32_t[?]", chunk)
  -- the bucket and first entry of a chunk of fires whose timers were taken at once
  -- (weir.aggwindow, wire_watermark), false when none is under way
  inst.f_b, inst.f_first = false, 0
  inst.g_off = ffi.new("int32_t[?]", chunk + 1)
  inst.g_cap = 0
  inst.g_vals = ffi.new("double[1]") -- grown by the first gather that needs more (g_cap)
  if cagg then
    inst.g_vals = ffi.new("double[?]", chunk)
    inst.g_cnt = ffi.new("double[?]", chunk)
    inst.g_starts = ffi.new("double[?]", chunk) -- the windows' starts (weir_aggs_due)
  end
end

---Built-in aggregate: applies the batch of elements (key id, timestamp, value) in one C call
---(the per-element path's only C call, every BATCH elements). Every element of a batch is on
---time (its timestamp above the watermark it met), so none is late and no window it creates
---is due; the windows it creates keep their timers in C (weir.aggwindow fires them from there,
---or M.cagg_sync moves them into inst.tq).
function M.cagg_flush(node, inst)
  local b = inst.batch
  local n = b.n
  if n == 0 then
    return
  end
  b.n = 0
  local m = C.weir_aggs_apply(inst.cagg, n, b.keys, b.ts, b.x, node.assigner.size,
    node.assigner.offset)
  if m < 0 then
    error(("window store: %s"):format(ffi.string(C.weir_strerror(m))), 0)
  end
end

---Built-in aggregate: the batch applied, then the timers of the windows the applies created
---and C still keeps moved into inst.tq, per time in the order they were created (the
---elements' order; registering emits nothing, so this is the operator's order). Before
---anything reads the state or registers a timer.
function M.cagg_sync(node, inst)
  M.cagg_flush(node, inst)
  local ck, cs = inst.c_keys, inst.c_starts
  local m = C.weir_aggs_created(inst.cagg, ck, cs)
  C.weir_aggs_created_clear(inst.cagg)
  local size, lateness = node.assigner.size, node.lateness
  local tq, keys, starts = inst.tq, ck[0], cs[0]
  if lateness > 0 then
    -- m + 1 trips, the last one empty (as weir.aggwindow's sliced flush): a watermark's sync,
    -- deep in the tick's trace, then always enters this loop's own trace, even when nothing
    -- was created (m == 0, most syncs); a zero-trip exit there would start a side trace with
    -- the tick's frames live, which LuaJIT cannot assemble ("NYI: register coalescing too
    -- complex", retried every tick: tumbling_builtin_late_lateness's 69 aborts per run).
    for j = 0, m do
      if j == m then
        break
      end
      local kid = keys[j]
      local maxts = starts[j] + size - 1
      timerq.add(tq, maxts, kid)
      local t = maxts + lateness
      if t < 9.2e18 then -- wincontext.cleanup_time: past the end of time, no timer
        timerq.add(tq, t, -kid)
      end
    end
    return
  end
  -- one timer per window, mostly in runs at one time (the windows of a key round end together)
  local j = 0
  while j < m do
    local t = starts[j] + size - 1
    local b = timerq.bucket(tq, t)
    local len = b.len
    repeat
      len = len + 1
      b[len] = keys[j]
      j = j + 1
    until j == m or starts[j] + size - 1 ~= t
    b.len = len
  end
  tq.count = tq.count + m
end

---Built-in aggregate: window [a, ...) of kid's accumulator as weir.aggregates' Lua add() keeps
---it (avg: { sum, count }) and its element count.
local function cagg_acc(node, inst, kid, a)
  local out = inst.g_out
  C.weir_aggs_get(inst.cagg, kid, a, out)
  if node.user_fn.builtin.kind == "avg" then
    return { out[0], out[1] }, out[1]
  end
  return out[0], out[1]
end
M.cagg_acc = cagg_acc

---A key id's key: a whole-number key is its id - 1; from DIRECT on, an interned one.
local function key_of(inst, kid)
  if kid < DIRECT then
    return kid - 1
  end
  return inst.keys[kid - DIRECT]
end
M.key_of = key_of

---Key ids: a whole-number key k in [0, DIRECT - 1) is its own id k + 1, with no table (most
---keys are ids, counters or hashes already); any other key is interned (wincontext.interner)
---to an id from DIRECT on.
function M.interner(node)
  local interned = wc.interner(node.keyed)
  local keyed = node.keyed
  return function(inst, key)
    if keyed and type(key) == "number" and key >= 0 and key < DIRECT - 1 and key == floor(key)
        and (key ~= 0 or 1 / key > 0) then
      return key + 1
    end
    return interned(inst, key) + DIRECT
  end
end

---Sliced: counts the hits of kid's current slice in C and forgets the pointer (it stays
---valid until the key's slices change: the next slice of the key or a drop flush first).
local function flush_slice(inst, kid)
  local start = inst.sl_start[kid]
  if start ~= nil then
    local hits = inst.sl_hits[kid]
    if hits > 0 then
      C.weir_slices_count_add(inst.slices, kid, start, hits)
    end
    inst.sl_start[kid], inst.sl_cell[kid], inst.sl_hits[kid] = nil, nil, nil
  end
end
M.flush_slice = flush_slice

local function flush_slices(inst)
  for kid in pairs(inst.sl_start) do
    flush_slice(inst, kid)
  end
end
M.flush_slices = flush_slices

---Sliced built-in aggregate: its batch applied, with the timers of the windows it creates
---(weir.aggwindow's node.sl_flush). Before anything reads the state or registers a timer.
local function sl_sync(node, inst)
  local b = inst.sl_batch
  if b and b.n > 0 then
    node.sl_flush(inst)
  end
end
M.sl_sync = sl_sync

---Drops window [a, a + size) of kid: tumbling, its window; sliced, slice a (the window is the
---last that covers it); then its window_state.
function M.drop(inst, k, kid, a, size)
  if k == 1 then
    if inst.cagg then -- its own table in aggs.c
      C.weir_aggs_drop(inst.cagg, kid, a)
    else
      local id = C.weir_wintab_drop(inst.wtab, kid, a)
      if id >= 0 then
        inst.accs[id], inst.counts[id] = nil, nil
      end
    end
    if inst.last_start[kid] == a then
      inst.last_start[kid] = nil
    end
  else
    flush_slice(inst, kid)
    C.weir_slices_drop(inst.slices, kid, a)
  end
  M.drop_window_state(inst, kid, a, size)
end

---Drops the window_state() of window [a, a + size) of kid (M.drop's last step; alone when a
---fire dropped the window's slice in C already).
function M.drop_window_state(inst, kid, a, size)
  if inst.ws_n > 0 then -- some window has window_state() (a field's test: no call per window)
    local wslot = C.weir_store_find(inst.wstore, kid, a, a + size)
    if wslot >= 0 then
      local wstate = inst.wstate
      if wstate[wslot] ~= nil then
        wstate[wslot] = nil
        inst.ws_n = inst.ws_n - 1
      end
      C.weir_store_drop(inst.wstore, wslot)
    end
  end
end

---window_state() of window [start, stop) of kid.
function M.window_state(inst, kid, start, stop)
  local slot = C.weir_store_slot(inst.wstore, kid, start, stop)
  local s = inst.wstate[slot]
  if not s then
    s = {}
    inst.wstate[slot] = s
  end
  return s
end

---global_state() of kid.
function M.global_state(inst, kid)
  local g = inst.gstate[kid]
  if not g then
    g = {}
    inst.gstate[kid] = g
  end
  return g
end

---The accumulators of kid's slices in [lo, hi), merged in start order (nil when none), as
---weir_slices_fire merges them.
function M.slices_acc(inst, kid, lo, hi, merge)
  local n = C.weir_slices_range(inst.slices, kid, lo, hi, inst.cells, inst.cells_cap)
  if n > inst.cells_cap then
    inst.cells_cap = n
    inst.cells = ffi.new("double[?]", n)
    n = C.weir_slices_range(inst.slices, kid, lo, hi, inst.cells, n)
  end
  if n <= 0 then
    return nil
  end
  local cells = inst.cells
  local acc = cells[0]
  for i = 1, n - 1 do
    acc = merge(acc, cells[i])
  end
  return acc
end

---The merge of a sliced node's slices: reduce's function, or the aggregate's merge.
function M.merge_of(node)
  return node.fn_kind == "reduce" and node.user_fn or node.user_fn.merge
end

-- The enumeration (weir.windowing) -------------------------------------------------------------

---Every slice of a sliced subtask: { kid, start, count }.
local function slices_of(node, inst)
  sl_sync(node, inst)
  flush_slices(inst)
  local n = C.weir_slices_stat(inst.slices, C.WEIR_STORE_OPEN)
  local dump = ffi.new("double[?]", 3 * n + 3)
  C.weir_slices_dump(inst.slices, dump, n)
  local out = {}
  for i = 0, n - 1 do
    out[#out + 1] = { kid = dump[3 * i], start = dump[3 * i + 1], count = dump[3 * i + 2] }
  end
  return out
end

-- A Lua trigger's window id in inst.tst: p > 0, its timer is the entry at place p of the
-- bucket of its max timestamp and it has not fired; -p, the same and it has fired; 0, it has
-- fired and has no timer; nil, neither (a deleted timer's entry stays, a tombstone: the place
-- no longer says it).

---The place of window id's timer in its bucket (inst.tst), or nil.
function M.t_at(inst, id)
  local p = inst.tst[id]
  if p == nil or p == 0 then
    return nil
  end
  return p > 0 and p or -p
end

---Whether window id has fired (inst.tst).
function M.t_fired(inst, id)
  local p = inst.tst[id]
  return p ~= nil and p <= 0
end

local function window_state_of(inst, kid, a, stop)
  if next(inst.wstate) == nil then
    return nil
  end
  local wslot = C.weir_store_find(inst.wstore, kid, a, stop)
  return wslot >= 0 and inst.wstate[wslot] or nil
end

---Every window of a subtask as plain values: { kid, start, stop, contents, count,
---window_state, fired } (keep(kid) chooses keys; without with_contents, no accumulators). The
---operator runs only the event_time trigger, so a window past its max timestamp has fired. A sliced
---window exists while a slice it covers does and it is not cleaned up; its contents are the
---merge of its slices', its count their elements'.
function M.windows(node, inst, keep, with_contents)
  local size, slide = node.assigner.size, node.assigner.slide
  local k = size / slide
  local list = {}
  if k == 1 then
    local e = ffi.new("double[2]")
    local cagg = inst.cagg
    if cagg then
      M.cagg_sync(node, inst)
    end
    for i = 0, (cagg and C.weir_aggs_capacity(cagg) or C.weir_wintab_capacity(inst.wtab)) - 1 do
      local id = cagg and C.weir_aggs_at(cagg, i, e) or C.weir_wintab_at(inst.wtab, i, e)
      if id >= 0 and keep(e[0]) then
        local kid, a = e[0], e[1]
        local acc, count = inst.accs[id], inst.counts[id] or 0
        if cagg then
          acc, count = cagg_acc(node, inst, kid, a)
        end
        list[#list + 1] = { kid = kid, start = a, stop = a + size,
                            fired = inst.tst and M.t_fired(inst, id)
                              or (not inst.tst and a + size - 1 <= inst.watermark
                                  and acc ~= nil),
                            contents = with_contents and acc or nil,
                            count = count,
                            window_state = window_state_of(inst, kid, a, a + size) }
      end
    end
    return list
  end
  local W, seen = inst.watermark, {}
  local fat = inst.failed_at -- a fire at this time failed the job (aggwindow, failed)
  local merge = M.merge_of(node)
  for _, sl in ipairs(slices_of(node, inst)) do
    local kid, a = sl.kid, sl.start
    for _ = 1, keep(kid) and k or 0 do
      local c = wc.cleanup_time(node, a + size - 1)
      if c <= W and (not fat or c < fat or (c == fat and not inst.failed_keys.clean[kid])) then
        break -- cleaned up (after a failed fire: before its time, or at it before its key)
      end
      local per = seen[kid] -- by number, not by string: a string of a time can round
      if not per then
        per = {}
        seen[kid] = per
      end
      local e = per[a]
      if not e then
        local mt = a + size - 1
        local fired = mt <= W and (not fat or mt < fat
                                   or (mt == fat and not inst.failed_keys.fire[kid]))
        e = { kid = kid, start = a, stop = a + size, count = 0, fired = fired,
              contents = with_contents and M.slices_acc(inst, kid, a, a + size, merge) or nil,
              window_state = window_state_of(inst, kid, a, a + size) }
        per[a] = e
        list[#list + 1] = e
      end
      e.count = e.count + sl.count
      a = a - slide
    end
  end
  return list
end

---The slices of a sliced subtask with their accumulators: { kid, start, stop, acc, count }.
function M.slices(node, inst, keep)
  local slide = node.assigner.slide
  local out = {}
  for _, sl in ipairs(slices_of(node, inst)) do
    if keep(sl.kid) then
      local n = C.weir_slices_range(inst.slices, sl.kid, sl.start, sl.start + slide,
        inst.cells, inst.cells_cap)
      out[#out + 1] = { kid = sl.kid, start = sl.start, stop = sl.start + slide,
                        acc = n > 0 and inst.cells[0] or nil, count = sl.count }
    end
  end
  return out
end

---The timers of a subtask in pop order: { domain = "event", time, kid, start, stop }.
function M.timers(node, inst)
  if inst.cagg then
    M.cagg_sync(node, inst)
  end
  sl_sync(node, inst)
  local size, lateness = node.assigner.size, node.lateness
  local q, times = inst.tq, {}
  for i = 1, q.n do
    times[i] = q.times[i]
  end
  table.sort(times)
  local out = {}
  for _, t in ipairs(times) do
    local b = q.buckets[t]
    for i = b.head, b.len do
      local e = b[i]
      local kid, a = e, t - size + 1
      if e < 0 then
        kid, a = -e, t - lateness - size + 1
      end
      -- a Lua trigger's deleted timer leaves its entry (a tombstone): its window's place says
      local live = not inst.tst or M.t_at(inst, C.weir_wintab_find(inst.wtab, kid, a)) == i
      if live then
        out[#out + 1] = { domain = "event", time = t, kid = kid, start = a, stop = a + size }
      end
    end
  end
  return out
end

---What status and metrics read (weir.windowing.stats).
function M.stats(node, inst)
  local open, elements, bytes
  if inst.cagg then
    M.cagg_sync(node, inst)
  end
  sl_sync(node, inst)
  if node.assigner.size == node.assigner.slide then
    -- with the windows a fire took out of wtab and has not cleared yet (aggwindow: the chunk
    -- of fires in progress), which a window function asking sees as open, as before its clear
    local open_of = inst.cagg and C.weir_aggs_stat(inst.cagg, C.WEIR_STORE_OPEN)
      or C.weir_wintab_stat(inst.wtab, C.WEIR_STORE_OPEN)
    open = open_of + inst.w_taken
    elements = 0
    if inst.cagg then
      for _, w in ipairs(M.windows(node, inst, function() return true end, false)) do
        elements = elements + w.count
      end
    end
    for _, n in pairs(inst.counts) do
      elements = elements + n
    end
    bytes = inst.cagg and C.weir_aggs_stat(inst.cagg, C.WEIR_STORE_BYTES)
      or C.weir_wintab_stat(inst.wtab, C.WEIR_STORE_BYTES)
  else
    -- as the general operator counts them: an element once per window it is in
    local list = M.windows(node, inst, function() return true end, false)
    open, elements = #list, 0
    for _, w in ipairs(list) do
      elements = elements + w.count
    end
    bytes = C.weir_slices_stat(inst.slices, C.WEIR_STORE_BYTES)
  end
  local q = inst.tq
  local nxt = timerq.next(q)
  if inst.tst then -- the earliest time may have tombstones only
    local first = M.timers(node, inst)[1]
    nxt = first and first.time or INF
  end
  return { open_windows = open, elements = elements,
           store_bytes = bytes + C.weir_store_stat(inst.wstore, C.WEIR_STORE_BYTES),
           event_timers = q.count, next_event_timer = nxt,
           processing_timers = 0, next_processing_timer = INF }
end

return M
