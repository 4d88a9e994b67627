-- weir.winckpt: the window layer's checkpoint part (weir.windowing.checkpoint_parts). A window
-- node's state is written logically, one section per key group (Flink's key group of the
-- key, as the hash exchange computes it): the group's keys by value, then per window its key
-- (an index into the keys), start, stop and pieces, per key global_state, merging windows'
-- in-flight sets, and the timers with their registration order. Never slot ids, window ids,
-- key ids or addresses: a restore rebuilds every piece through weir.winstate (the general
-- operator) or the fast operator's own tables (weir.aggstate's), which are the only code that
-- opens a slot or a window.
--
-- Section of the general operator (repr "general"):
--   win     per slot { key index, start, stop, count, trigger state (name -> value, built-in
--           cells and Lua alike), contents, evictor timestamps, window_state, fired }
--   msets   merging: per key { key index, { start, stop, sstart, sstop, ... } } in order
-- Section of the fast operator ("tumbling", "sliced"), packed columns (ffi strings):
--   wk, ws, wn (int32 key index, double start, int32 count) and wa (double accumulators; wv, a
--   Lua list, when one is not a number) per tumbling window; sk, ss, sn, sa per slice
--   wst     per window_state() { key index, start, stop, state }
-- Both: gstate { key index, state } per key; timers as flat runs: general (domain, time, key
--   index, start, stop, rank) in `tm`; fast: tt (double time), te (int32 +key index: the timer
--   at the window's max timestamp, -key index: at its cleanup time), tr (int32 rank). The
--   rank is the timer's place in its subtask's pop order ((time, registration) per domain), so
--   a restore that merges key groups of several old subtasks registers them in (time, old
--   subtask, rank) order: equal-time timers keep their registration order.
local ffi = require("ffi")
local C = require("weir.ffi")
local keys = require("weir.keys")
local winstate = require("weir.winstate")
local aggstate = require("weir.aggstate")
local timerq = require("weir.timerq")
local wc = require("weir.wincontext")
local failure = require("weir.failure")
local ckvalue = require("weir.ckvalue")
local util = require("weir.util")

local M = {}

local new_table = require("table.new")

local INF = math.huge
local EVENT, PROCESSING = tonumber(C.WEIR_TIME_EVENT), tonumber(C.WEIR_TIME_PROCESSING)
local VERSION = 1

-- Values weir compares by identity (json.null) and weir.record_type records are written as
-- marker tables (weir.ckvalue; a section that has one says so: `marked`).
local copy, thaw = ckvalue.copy, ckvalue.thaw

-- Packed columns ------------------------------------------------------------------------------

local double_t, int32_t = ffi.typeof("double[?]"), ffi.typeof("int32_t[?]")
local double_p, int32_p = ffi.typeof("const double *"), ffi.typeof("const int32_t *")

local function pack(list, n, vla, width)
  local buf = vla(math.max(n, 1))
  for i = 1, n do
    buf[i - 1] = list[i]
  end
  return ffi.string(buf, n * width)
end

local function packd(list)
  return pack(list, #list, double_t, 8)
end

local function packi(list)
  return pack(list, #list, int32_t, 4)
end

local function unpackd(s)
  return ffi.cast(double_p, s), #s / 8
end

local function unpacki(s)
  return ffi.cast(int32_p, s), #s / 4
end

-- Sections ----------------------------------------------------------------------------------

local function key_group(node, key)
  if not node.keyed then
    return -1
  end
  local h, why = keys.java_hash(key)
  if not h then
    keys.bad_key(key, why)
  end
  return tonumber(C.weir_keygroup_of(h, node.max_parallelism))
end

-- The sections of one snapshot, by key group: sec(kid) gives the section of a key id's group
-- and the key's index in it.
local function sections(node, inst, repr, key_of, out, size_hint)
  -- sized up front: a table grown key by key to a million rehashes twenty times
  local sec_of, ki_of = new_table(0, size_hint or 0), new_table(0, size_hint or 0)
  local a = node.assigner
  return function(kid)
    local sec = sec_of[kid]
    if sec then
      return sec, ki_of[kid]
    end
    local key = key_of(inst, kid)
    local g = key_group(node, key)
    sec = out[g]
    if not sec then
      sec = { v = VERSION, repr = repr, subtask = inst.index, size = a.size, slide = a.slide,
              nkeys = 0, keys = {}, gstate = {} }
      out[g] = sec
    end
    if sec.subtask ~= inst.index then
      failure.job_error(("%s: key group %d is in subtasks %d and %d"):format(node.label, g,
        sec.subtask + 1, inst.index + 1))
    end
    local ki = sec.nkeys + 1
    sec.nkeys = ki
    sec.keys[ki] = copy(key, 0)
    sec_of[kid], ki_of[kid] = sec, ki
    return sec, ki
  end
end

local function append(t, name, x)
  local list = t[name]
  if not list then
    list = {}
    t[name] = list
  end
  list[#list + 1] = x
end

local function general_key(inst, kid)
  return inst.keys[kid]
end

local function snapshot_general(node, inst, out)
  local sec = sections(node, inst, "general", general_key, out, #inst.keys)
  for slot, w in pairs(inst.wins) do
    local s, ki = sec(inst.wkid[slot])
    local list = s.win or {}
    s.win = list
    list[#list + 1] = { ki, w.start, w.stop, C.weir_store_count(inst.store, slot),
                        copy(winstate.trigger_state(node, inst, slot), 0),
                        copy(inst.contents[slot], 0), copy(inst.stamps[slot], 0),
                        copy(inst.wstate[slot], 0), inst.fires[slot] or nil }
  end
  for kid, list in pairs(inst.msets) do
    if #list > 0 then
      local s, ki = sec(kid)
      local flat = {}
      for i, e in ipairs(list) do
        flat[4 * i - 3], flat[4 * i - 2], flat[4 * i - 1], flat[4 * i] = e.start, e.stop,
          e.sstart, e.sstop
      end
      append(s, "msets", { ki, flat })
    end
  end
  for _, d in ipairs({ EVENT, PROCESSING }) do
    local buf, n = util.timers_list(inst.timers, d)
    for i = 0, n - 1 do
      local t = buf[i]
      local s, ki = sec(t.key)
      local tm = s.tm
      if not tm then
        tm = {}
        s.tm = tm
      end
      local n0 = #tm
      tm[n0 + 1], tm[n0 + 2], tm[n0 + 3], tm[n0 + 4], tm[n0 + 5], tm[n0 + 6] = d, t.time_ms,
        ki, t.start, t.stop, i
    end
  end
  return sec
end

local function snapshot_fast(node, inst, out, repr)
  local hint = repr == "tumbling" and C.weir_wintab_stat(inst.wtab, C.WEIR_STORE_OPEN)
    or C.weir_slices_stat(inst.slices, C.WEIR_STORE_OPEN)
  local sec = sections(node, inst, repr, aggstate.key_of, out, hint)
  local cols = {} -- per section its Lua columns, packed at the end
  local function col(s)
    local c = cols[s]
    if not c then
      c = { wk = {}, ws = {}, wn = {}, wa = {}, sk = {}, ss = {}, sn = {}, sa = {}, tt = {},
            te = {}, tr = {}, numeric = true, n = 0, ns = 0, nt = 0 }
      cols[s] = c
    end
    return c
  end
  if repr == "tumbling" then
    local e = ffi.new("double[2]")
    local cagg = inst.cagg -- a built-in aggregate in C: its batch first (weir.aggstate)
    if cagg then
      aggstate.cagg_sync(node, inst)
    end
    for i = 0, C.weir_wintab_capacity(inst.wtab) - 1 do
      local id = C.weir_wintab_at(inst.wtab, i, e)
      if id >= 0 then
        local s, ki = sec(e[0])
        local c = col(s)
        local n = c.n + 1
        c.n = n
        c.wk[n], c.ws[n], c.wn[n] = ki, e[1], inst.counts[id] or 0
        local acc = inst.accs[id]
        if cagg then -- its accumulator's number (avg: the sum; the count is wn)
          C.weir_aggs_get(cagg, inst.wtab, e[0], e[1], inst.g_out)
          acc, c.wn[n] = inst.g_out[0], inst.g_out[1]
        end
        if type(acc) ~= "number" then
          c.numeric = false
        end
        c.wa[n] = copy(acc, 0)
      end
    end
  else
    for kid in pairs(inst.sl_start) do
      aggstate.flush_slice(inst, kid) -- the hits counted through the kept pointer go to C
    end
    local n = C.weir_slices_stat(inst.slices, C.WEIR_STORE_OPEN)
    local dump = ffi.new("double[?]", 3 * n + 3)
    C.weir_slices_dump(inst.slices, dump, n)
    local slide, one = node.assigner.slide, ffi.new("double[1]")
    for i = 0, n - 1 do
      local kid, start = dump[3 * i], dump[3 * i + 1]
      local s, ki = sec(kid)
      local c = col(s)
      C.weir_slices_range(inst.slices, kid, start, start + slide, one, 1)
      local m = c.ns + 1
      c.ns = m
      c.sk[m], c.ss[m], c.sn[m], c.sa[m] = ki, start, dump[3 * i + 2], one[0]
    end
  end
  local q, times = inst.tq, {}
  for i = 1, q.n do
    times[i] = q.times[i]
  end
  table.sort(times)
  local rank = 0
  for _, t in ipairs(times) do
    local b = q.buckets[t]
    for i = b.head, b.len do
      local entry = b[i]
      local s, ki = sec(entry < 0 and -entry or entry)
      local c = col(s)
      local m = c.nt + 1
      c.nt = m
      c.tt[m], c.te[m], c.tr[m] = t, entry < 0 and -ki or ki, rank
      rank = rank + 1
    end
  end
  if next(inst.wstate) ~= nil then
    local w = ffi.new("double[3]")
    for slot, st in pairs(inst.wstate) do
      if C.weir_store_window(inst.wstore, slot, w) == 0 then
        local s, ki = sec(w[0])
        append(s, "wst", { ki, w[1], w[2], copy(st, 0) })
      end
    end
  end
  for s, c in pairs(cols) do
    if c.n > 0 then
      s.wk, s.ws, s.wn = packi(c.wk), packd(c.ws), packi(c.wn)
      if c.numeric then
        s.wa = packd(c.wa)
      else
        s.wv = c.wa
      end
    end
    if c.ns > 0 then
      s.sk, s.ss, s.sn, s.sa = packi(c.sk), packd(c.ss), packi(c.sn), packd(c.sa)
    end
    if c.nt > 0 then
      s.tt, s.te, s.tr = packd(c.tt), packi(c.te), packi(c.tr)
    end
  end
  return sec
end

---The sections of node's window state: { [key group] = section } (a node that is not keyed:
---its one section under -1).
function M.snapshot(node, repr)
  local out = {}
  ckvalue.reset_marked()
  for _, inst in ipairs(node.instances) do
    local sec = repr == "general" and snapshot_general(node, inst, out)
      or snapshot_fast(node, inst, out, repr)
    for kid, g in pairs(inst.gstate) do
      if next(g) ~= nil then
        local s, ki = sec(kid)
        s.gstate[#s.gstate + 1] = { ki, copy(g, 0) }
      end
    end
  end
  if ckvalue.marked() then
    for _, sec in pairs(out) do
      sec.marked = true
    end
  end
  if next(out) == nil then -- nothing open: one empty section says so (no "starts empty")
    local a = node.assigner
    out[node.keyed and 0 or -1] = { v = VERSION, repr = repr, subtask = 0, size = a.size,
                                    slide = a.slide, nkeys = 0, keys = {}, gstate = {} }
  end
  return out
end

-- Restore -----------------------------------------------------------------------------------

---Makes every subtask's window state fresh (the round-trip mode throws the state away).
function M.reset(node, repr)
  for _, inst in ipairs(node.instances) do
    if repr == "general" then
      winstate.init(inst)
    else
      aggstate.init(inst, node.assigner.size / node.assigner.slide, aggstate.cagg_kind(node))
    end
    inst.tctx.slot = -1
  end
end

local function check(node, g, sec, repr)
  local a = node.assigner
  local why
  if type(sec) ~= "table" or sec.v ~= VERSION then
    why = "its window section has another format"
  elseif sec.repr ~= repr then
    why = ("its windows ran on the %s operator, this job's run on the %s one (the window's "
      .. "shape, trigger, evictor or function changed)"):format(sec.repr, repr)
  elseif sec.size ~= a.size or sec.slide ~= a.slide then
    why = ("its windows are %s long every %s, this job's %s every %s"):format(
      tostring(sec.size), tostring(sec.slide), tostring(a.size), tostring(a.slide))
  end
  if why then
    failure.job_error(("%s: cannot restore key group %d: %s"):format(node.label, g, why))
  end
end

-- The cell index of trigger state `name` (wincontext's rule: the first names get cells).
local function cell_of(node, name)
  return wc.cell_index(node, name)
end

-- The timers a subtask gets, as runs: per old subtask and domain, its timers by rank (their
-- place in that subtask's pop order) in parallel arrays; no table per timer.
local function add_timer(runs, old, d, rank, time, kid, start, stop)
  local by_domain = runs[old]
  if not by_domain then
    by_domain = {}
    runs[old] = by_domain
  end
  local r = by_domain[d]
  if not r then
    r = { top = 0, t = {}, k = {}, s = {}, e = {} }
    by_domain[d] = r
  end
  local i = rank + 1
  r.t[i], r.k[i], r.s[i], r.e[i] = time, kid, start, stop
  if i > r.top then
    r.top = i
  end
end

-- Calls register(d, time, kid, start, stop) for every timer of the runs in (domain, time, old
-- subtask, rank) order: each run is in pop order already, so the runs of a domain are merged
-- (a run's holes are the ranks whose key groups went to other subtasks).
local function register_runs(runs, register)
  local olds = {}
  for old in pairs(runs) do
    olds[#olds + 1] = old
  end
  table.sort(olds)
  for _, d in ipairs({ EVENT, PROCESSING }) do
    local heads = {}
    for _, old in ipairs(olds) do
      local r = runs[old][d]
      if r then
        heads[#heads + 1] = { r = r, i = 1 }
      end
    end
    while true do
      local best, bt
      for _, h in ipairs(heads) do
        local r, i = h.r, h.i
        while i <= r.top and r.t[i] == nil do
          i = i + 1
        end
        h.i = i
        if i <= r.top and (bt == nil or r.t[i] < bt) then
          best, bt = h, r.t[i]
        end
      end
      if not best then
        break
      end
      -- the best run's timers while they stay first: before the other runs' next times, and
      -- at an equal time before the runs of later old subtasks only
      local r, i = best.r, best.i
      local before, after, seen = math.huge, math.huge, false
      for _, h in ipairs(heads) do
        if h == best then
          seen = true
        elseif h.i <= h.r.top then
          local other = h.r.t[h.i]
          if seen then
            after = math.min(after, other)
          else
            before = math.min(before, other)
          end
        end
      end
      while i <= r.top do
        local t = r.t[i]
        if t ~= nil then
          if t >= before or t > after then
            break
          end
          register(d, t, r.k[i], r.s[i], r.e[i])
        end
        i = i + 1
      end
      best.i = i
    end
  end
end

local function restore_general(node, inst, sec, kids, timers, old)
  local store = inst.store
  for _, r in ipairs(sec.win or {}) do
    local kid = kids[r[1]]
    local slot = winstate.open(inst, kid, r[2], r[3])
    if r[4] ~= 0 then
      C.weir_store_count_add(store, slot, r[4])
    end
    for name, v in pairs(r[5] or {}) do
      winstate.state_set(inst, slot, name, cell_of(node, name), v)
    end
    inst.contents[slot], inst.stamps[slot], inst.wstate[slot] = r[6], r[7], r[8]
    inst.fires[slot] = r[9] or nil
  end
  for _, m in ipairs(sec.msets or {}) do
    local list, flat = {}, m[2]
    for i = 1, #flat / 4 do
      list[i] = { start = flat[4 * i - 3], stop = flat[4 * i - 2], sstart = flat[4 * i - 1],
                  sstop = flat[4 * i] }
    end
    inst.msets[kids[m[1]]] = list
  end
  local tm = sec.tm or {}
  for i = 1, #tm, 6 do
    add_timer(timers, old, tm[i], tm[i + 5], tm[i + 1], kids[tm[i + 2]], tm[i + 3], tm[i + 4])
  end
end

local function restore_fast(node, inst, sec, kids, timers, old)
  if sec.wk then
    local wk, n = unpacki(sec.wk)
    local ws, wn = unpackd(sec.ws), unpacki(sec.wn)
    local wa = sec.wa and unpackd(sec.wa)
    for i = 0, n - 1 do
      local id = C.weir_wintab_add(inst.wtab, kids[wk[i]], ws[i])
      if id < 0 then
        failure.job_error(("%s: cannot restore a window: %s"):format(node.label,
          ffi.string(C.weir_strerror(id))))
      end
      if inst.cagg then -- a built-in aggregate in C: (v, n), as the snapshot wrote them
        local v = wa and wa[i] or sec.wv[i + 1]
        if type(v) ~= "number" or C.weir_aggs_set(inst.cagg, inst.wtab, kids[wk[i]], ws[i], v,
            wn[i]) < 0 then
          failure.job_error(("%s: cannot restore a window: its accumulator %s is not a "
            .. "built-in aggregate's"):format(node.label, tostring(v)))
        end
      else
        inst.counts[id] = wn[i] ~= 0 and wn[i] or nil
        if wa then
          inst.accs[id] = wa[i]
        else
          inst.accs[id] = sec.wv[i + 1]
        end
      end
    end
  end
  if sec.sk then
    local sk, n = unpacki(sec.sk)
    local ss, sn, sa = unpackd(sec.ss), unpacki(sec.sn), unpackd(sec.sa)
    local fresh = inst.fresh
    for i = 0, n - 1 do
      local kid = kids[sk[i]]
      local cell = C.weir_slices_acc(inst.slices, kid, ss[i], fresh)
      if cell == nil then
        failure.job_error(("%s: cannot restore a slice (too many open slices)"):format(
          node.label))
      end
      cell[0] = sa[i]
      if sn[i] ~= 1 then
        C.weir_slices_count_add(inst.slices, kid, ss[i], sn[i] - 1)
      end
    end
  end
  if sec.tt then
    local tt, n = unpackd(sec.tt)
    local te, tr = unpacki(sec.te), unpacki(sec.tr)
    for i = 0, n - 1 do
      local e = te[i]
      add_timer(timers, old, EVENT, tr[i], tt[i], e < 0 and -kids[-e] or kids[e])
    end
  end
  for _, w in ipairs(sec.wst or {}) do
    local slot = C.weir_store_slot(inst.wstore, kids[w[1]], w[2], w[3])
    inst.wstate[slot] = w[4]
  end
end

---Restores node's sections ({ [key group] = section }) into fresh subtasks: each key group
---goes to the subtask that owns it at the node's parallelism (KeyGroupRangeAssignment), and
---each subtask's timers are registered in (domain, time, old subtask, rank) order.
function M.restore(job, node, repr, groups)
  local intern = repr == "general" and wc.interner(node.keyed) or aggstate.interner(node)
  local p, maxp = node.parallelism, node.max_parallelism
  local per = {}
  for g, sec in pairs(groups) do
    check(node, g, sec, repr)
    if sec.marked then
      local ok, err = pcall(thaw, sec, 0)
      if not ok then
        failure.job_error(("%s: cannot restore key group %d: %s"):format(node.label, g, err))
      end
    end
    local st = 0
    if g >= 0 then
      st = tonumber(C.weir_keygroup_subtask(g, maxp, p))
    end
    local list = per[st] or {}
    per[st] = list
    list[#list + 1] = { g, sec }
  end
  local processing = false
  for st, list in pairs(per) do
    local inst = node.instances[st + 1]
    table.sort(list, function(a, b) return a[1] < b[1] end)
    local timers = {}
    for _, e in ipairs(list) do
      local sec = e[2]
      local kids = {}
      for ki = 1, sec.nkeys do
        kids[ki] = intern(inst, sec.keys[ki])
      end
      if repr == "general" then
        restore_general(node, inst, sec, kids, timers, sec.subtask)
      else
        restore_fast(node, inst, sec, kids, timers, sec.subtask)
      end
      for _, gs in ipairs(sec.gstate) do
        inst.gstate[kids[gs[1]]] = gs[2]
      end
    end
    if repr == "general" then
      register_runs(timers, function(d, t, kid, start, stop)
        C.weir_timers_register(inst.timers, d, t, kid, start, stop)
        processing = processing or d == PROCESSING
      end)
    else
      local tq = inst.tq
      register_runs(timers, function(_, t, e) timerq.add(tq, t, e) end)
    end
  end
  if processing then
    job:processing_timers_changed()
  end
end

---The lateness floors of window subtask inst after the restore of its operator's watermarks
---(weir.checkpoint_parts): old_p the parallelism at the snapshot, old_wm[i + 1] old subtask
---i's watermark. Per key group inst owns now, the watermark of the old subtask that owned it,
---kept when it is above inst's (the minimum of them): a record of that group is late against
---it (weir.wincontext.floor_of). Every key group, not only those with a section: a group whose
---windows all fired and were purged has none and needs its floor the most. At the same
---parallelism (or on a stream that is not keyed) there are none.
function M.restore_floors(node, inst, old_p, old_wm)
  inst.floors, inst.floor_top = false, -INF
  local maxp, p, st = node.max_parallelism, node.parallelism, inst.index
  if not node.keyed or not maxp or old_p == p then
    return
  end
  local w, floors, top = inst.watermark, nil, -INF
  for g = 0, maxp - 1 do
    if C.weir_keygroup_subtask(g, maxp, p) == st then
      local f = old_wm[C.weir_keygroup_subtask(g, maxp, old_p) + 1]
      if f ~= nil and f > w then
        floors = floors or {}
        floors[g] = f
        top = math.max(top, f)
      end
    end
  end
  if floors then
    inst.floors, inst.floor_top = floors, top
  end
end

---Counts for `weir checkpoint inspect`: windows (or slices) and timers in a section.
function M.counts(sec)
  if type(sec) ~= "table" then
    return 0, 0, 0
  end
  local w = #(sec.win or {})
  if sec.wk then
    w = #sec.wk / 4
  end
  local slices = sec.sk and #sec.sk / 4 or 0
  local t = sec.tm and #sec.tm / 6 or (sec.tt and #sec.tt / 8 or 0)
  return w, t, slices
end

return M
