-- weir.winckpt: the window layer's checkpoint part (weir.windowing.checkpoint_parts). A window
-- node's state is written logically, one section per key group (Flink's key group of the
-- key, as the hash exchange computes it): the group's keys by value, then per window its key
-- (an index into the keys), start, stop and pieces, per key global_state, merging windows'
-- in-flight sets, and the timers with their registration order. Never slot ids, window ids,
-- key ids or addresses: a restore rebuilds every piece through weir.winstate (the general
-- operator) or the fast operator's own tables (weir.aggstate's), which are the only code that
-- opens a slot or a window.
--
-- Section of the general operator (repr "general", v 2), packed columns (ffi strings) of its
-- n windows: wk, ws, we, wn (int32 key index, double start, double stop, int32 count); cn,
-- wc (the trigger state cells' names by cell index and #cn doubles per window, NaN unset:
-- only when one is set); wa (double contents, when every window's is a number) or wv (a Lua
-- list of contents, nil for none); wti, wtn, wtd (the evictor's timestamps: window index,
-- count, the doubles) or wtv (window index + 1 -> timestamps that are not numbers); wl
-- (window index + 1 -> trigger state in Lua, name -> value), wsv (-> window_state), wf
-- (int32 indices of the windows that fired); merging: mk, mn (int32 key index and entries per
-- key), md (per entry double start, stop, sstart, sstop, in order). User values are written
-- as they are when plain (weir.ckvalue.keep checks them; a value a checkpoint cannot keep
-- fails it, naming the window and the path), so the part skips the codec's walk (raw).
-- Section of the fast operator ("tumbling", "sliced"), packed columns (ffi strings):
--   wk, ws, wn (int32 key index, double start, int32 count) and wa (double accumulators; wv, a
--   Lua list, when one is not a number) per tumbling window; sk, ss, sn, sa per slice
--   wst     per window_state() { key index, start, stop, state }
-- Both: gstate { key index, state } per key; timers as packed columns: general tt, tk, ts,
--   te, tr, td (double time, int32 key index, double start and stop, int32 rank and domain);
--   fast: tt (double time), te (int32 +key index: the timer
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
local format = require("weir.format")

local M = {}

local new_table = require("table.new")

local INF = math.huge
local EVENT, PROCESSING = tonumber(C.WEIR_TIME_EVENT), tonumber(C.WEIR_TIME_PROCESSING)
local VERSION = 1 -- the fast operator's sections
local GENERAL_VERSION = 2 -- the general operator's (2: packed columns)

-- Values weir compares by identity (json.null) and weir.record_type records are written as
-- marker tables (weir.ckvalue; a section that has one says so: `marked`).
local thaw = ckvalue.thaw

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

-- keep(v, s, name, key, start, stop): user value v (named `name` in messages) as section s
-- keeps it (weir.ckvalue.keep: tables walked, not copied, unless they hold records or
-- json.null); what a checkpoint cannot keep fails it, naming the section (`what`, the part's
-- name, and the key group), the window or key, and the path.
local function keeper(what, out)
  return function(v, s, name, key, start, stop)
    local x, p, why = ckvalue.keep(v, name)
    if p == nil then
      return x
    end
    local g
    for gg, ss in pairs(out) do
      if ss == s then
        g = gg
      end
    end
    local place = start ~= nil and ("window [%s, %s) of key %s"):format(tostring(start),
      tostring(stop), format.value(key)) or ("key %s"):format(format.value(key))
    error(("section %s%s: %s: %s %s"):format(what,
      g and g >= 0 and (" (key group %d)"):format(g) or "", place, p, why), 0)
  end
end

-- A key's place in the snapshot's sections (out, by key group): its section (made when new)
-- and its index among the section's keys, the key written there.
local function add_key(node, inst, repr, out, keep, key)
  local g = key_group(node, key)
  local sec = out[g]
  if not sec then
    local a = node.assigner
    sec = { v = repr == "general" and GENERAL_VERSION or VERSION, repr = repr,
            subtask = inst.index, size = a.size, slide = a.slide, nkeys = 0, keys = {},
            gstate = {} }
    out[g] = sec
  end
  if sec.subtask ~= inst.index then
    failure.job_error(("%s: key group %d is in subtasks %d and %d"):format(node.label, g,
      sec.subtask + 1, inst.index + 1))
  end
  local ki = sec.nkeys + 1
  sec.nkeys = ki
  sec.keys[ki] = keep(key, sec, "key", key)
  return sec, ki
end

-- The sections of one snapshot, by key group: sec(kid) gives the section of a key id's group
-- and the key's index in it.
local function sections(node, inst, repr, key_of, out, size_hint, keep)
  -- sized up front: a table grown key by key to a million rehashes twenty times
  local sec_of, ki_of = new_table(0, size_hint or 0), new_table(0, size_hint or 0)
  return function(kid)
    local sec = sec_of[kid]
    if sec then
      return sec, ki_of[kid]
    end
    local ki
    sec, ki = add_key(node, inst, repr, out, keep, key_of(inst, kid))
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

-- The places of n items sorted by section (a counting sort): si[i] is item i's section index
-- (0 .. nsec - 1). Returns ord (the items in section order) and off (section k's items are
-- ord[off[k]] .. ord[off[k + 1] - 1], in their first order).
local function by_section(n, si, nsec)
  local off, at, ord = int32_t(nsec + 1), int32_t(nsec + 1), int32_t(math.max(n, 1))
  for i = 0, n - 1 do
    local k = si[i] + 1
    off[k] = off[k] + 1
  end
  for k = 1, nsec do
    off[k] = off[k] + off[k - 1]
  end
  ffi.copy(at, off, 4 * (nsec + 1))
  for i = 0, n - 1 do
    local k = si[i]
    ord[at[k]] = i
    at[k] = at[k] + 1
  end
  return ord, off
end

local function cut(p, from, to, width)
  return ffi.string(p + from, (to - from) * width)
end

-- Per key id (dense, from 1) of inst its section's index (ks.ksi, -1: none yet) and its key
-- index (ks.kki), int32 arrays of ks.nk + 1; ks.secs[0 .. ks.n - 1] the sections in the order
-- their first key came; ks.key(kid) adds a key id (its section index), ks.sec(kid) gives its
-- section and key index as sections() does. Shared by the general and the session operator's
-- snapshots.
local function key_sections(node, inst, out, keep)
  local keys_of = inst.keys
  local nk = math.max(#keys_of, 1)
  local ks = { nk = nk, ksi = int32_t(nk + 1), kki = int32_t(nk + 1), secs = {}, n = 0 }
  local ksi, kki, secs, index_of = ks.ksi, ks.kki, ks.secs, {}
  ffi.fill(ksi, 4 * (nk + 1), 0xff)
  function ks.key(kid)
    local s, ki = add_key(node, inst, "general", out, keep, keys_of[kid])
    local si = index_of[s]
    if not si then
      si = ks.n
      secs[si], index_of[s] = s, si
      ks.n = si + 1
    end
    ksi[kid], kki[kid] = si, ki
    return si
  end
  function ks.sec(kid)
    local si = ksi[kid]
    if si < 0 then
      si = ks.key(kid)
    end
    return secs[si], kki[kid]
  end
  return ks
end

-- The general operator's section, made in C arrays: every window, merging set and timer gets
-- its section index (by its key id's, cached per key id), a counting sort puts them in
-- section order, and each section's columns are slices of the arrays. Lua tables only for
-- what is not a number (contents that are not, trigger state in Lua, window_state,
-- timestamps that are not numbers), each checked (weir.ckvalue.keep), none copied.
local function snapshot_general(node, inst, out, keep)
  local ks = key_sections(node, inst, out, keep)
  local ksi, kki, secs, key, sec = ks.ksi, ks.kki, ks.secs, ks.key, ks.sec
  -- the names of the trigger state cells, by cell index
  local cn, ncell = {}, 0
  for name, idx in pairs(node.cell_of) do
    if idx then
      cn[idx + 1] = name
      ncell = math.max(ncell, idx + 1)
    end
  end
  local store, wins = inst.store, inst.wins
  local contents, stamps, lua_state, wstate, fires = inst.contents, inst.stamps,
    inst.lua_state, inst.wstate, inst.fires

  -- windows
  local n = 0
  for _ in pairs(wins) do
    n = n + 1
  end
  -- a window's key id, start and stop from the C store (one row), not its Lua window object
  local m = math.max(n, 1)
  local slots, wsi, win = int32_t(m), int32_t(m), double_t(3 * m)
  local i = 0
  for slot in pairs(wins) do
    if C.weir_store_window(store, slot, win + 3 * i) ~= 0 then
      failure.job_error(("%s: window slot %d is not in its store"):format(node.label, slot))
    end
    local kid = win[3 * i]
    local si = ksi[kid]
    if si < 0 then
      si = key(kid)
    end
    slots[i], wsi[i] = slot, si
    i = i + 1
  end
  local ord, off = by_section(n, wsi, ks.n)
  local K, S, E, N, A = int32_t(m), double_t(m), double_t(m), int32_t(m), double_t(m)
  local CL = ncell > 0 and double_t(m * ncell)
  for k = 0, ks.n - 1 do
    local from, to = off[k], off[k + 1]
    if to > from then
      local s = secs[k]
      local numeric, anycell = true, false
      local wl, wsv, wtv, wf, wti, wtn, wtd
      for p = from, to - 1 do
        local x = ord[p]
        local slot, b = slots[x], 3 * x
        local kid, start, stop = win[b], win[b + 1], win[b + 2]
        K[p], S[p], E[p], N[p] = kki[kid], start, stop, C.weir_store_count(store, slot)
        local j = p - from -- the window's index in its section (0-based)
        if CL then
          local cells, base = C.weir_store_cells(store, slot), p * ncell
          for c = 0, ncell - 1 do
            local v = cells[c]
            CL[base + c] = v
            if v == v then
              anycell = true
            end
          end
        end
        local v = contents[slot]
        if type(v) == "number" then
          A[p] = v
        else
          numeric = false
        end
        local ts = stamps[slot]
        if ts ~= nil then
          local packed = type(ts) == "table"
          local len = packed and #ts or 0
          if packed then
            for y = 1, len do
              if type(ts[y]) ~= "number" then
                packed = false
                break
              end
            end
          end
          if packed then
            wti, wtn, wtd = wti or {}, wtn or {}, wtd or {}
            local q, d = #wti + 1, #wtd
            wti[q], wtn[q] = j, len
            for y = 1, len do
              wtd[d + y] = ts[y]
            end
          else
            wtv = wtv or {}
            wtv[j + 1] = keep(ts, s, "timestamps", inst.keys[kid], start, stop)
          end
        end
        local ls = lua_state[slot]
        if ls ~= nil and next(ls) ~= nil then
          wl = wl or {}
          wl[j + 1] = keep(ls, s, "trigger_state", inst.keys[kid], start, stop)
        end
        local st = wstate[slot]
        if st ~= nil then
          wsv = wsv or {}
          wsv[j + 1] = keep(st, s, "window_state", inst.keys[kid], start, stop)
        end
        if fires[slot] then
          wf = wf or {}
          wf[#wf + 1] = j
        end
      end
      s.n = to - from
      s.wk, s.ws, s.we, s.wn = cut(K, from, to, 4), cut(S, from, to, 8), cut(E, from, to, 8),
        cut(N, from, to, 4)
      if anycell then
        s.cn, s.wc = { unpack(cn, 1, ncell) }, cut(CL, from * ncell, to * ncell, 8)
      end
      if numeric then
        s.wa = cut(A, from, to, 8)
      else
        local wv = new_table(to - from, 0)
        for p = from, to - 1 do
          local x = ord[p]
          local slot, b = slots[x], 3 * x
          local v = contents[slot]
          if v ~= nil and type(v) ~= "number" then
            v = keep(v, s, "contents", inst.keys[win[b]], win[b + 1], win[b + 2])
          end
          wv[p - from + 1] = v
        end
        s.wv = wv
      end
      if wti then
        s.wti, s.wtn, s.wtd = packi(wti), packi(wtn), packd(wtd)
      end
      s.wtv, s.wl, s.wsv = wtv, wl, wsv
      if wf then
        s.wf = packi(wf)
      end
    end
  end

  -- merging sets: per key its entries (start, stop, state window's start and stop)
  local nm, ne = 0, 0
  for _, list in pairs(inst.msets) do
    if #list > 0 then
      nm = nm + 1
    end
  end
  if nm > 0 then
    local mkid, msi = int32_t(nm), int32_t(nm)
    i = 0
    for kid, list in pairs(inst.msets) do
      if #list > 0 then
        local si = ksi[kid]
        if si < 0 then
          si = key(kid)
        end
        mkid[i], msi[i] = kid, si
        ne = ne + #list
        i = i + 1
      end
    end
    local mord, moff = by_section(nm, msi, ks.n)
    local MK, MN, MD = int32_t(nm), int32_t(nm), double_t(4 * ne)
    local d = 0
    for k = 0, ks.n - 1 do
      local from, to = moff[k], moff[k + 1]
      if to > from then
        local d0 = d
        for p = from, to - 1 do
          local kid = mkid[mord[p]]
          local list = inst.msets[kid]
          MK[p], MN[p] = kki[kid], #list
          for x = 1, #list do
            local e = list[x]
            MD[d], MD[d + 1], MD[d + 2], MD[d + 3] = e.start, e.stop, e.sstart, e.sstop
            d = d + 4
          end
        end
        local s = secs[k]
        s.mk, s.mn, s.md = cut(MK, from, to, 4), cut(MN, from, to, 4), cut(MD, d0, d, 8)
      end
    end
  end

  -- timers, in pop order per domain (event time first): time, key, window, rank, domain
  local be, ne_ = util.timers_list(inst.timers, EVENT)
  local bp, np = util.timers_list(inst.timers, PROCESSING)
  local nt = ne_ + np
  if nt > 0 then
    local tsi = int32_t(nt)
    for x = 0, nt - 1 do
      local t = x < ne_ and be[x] or bp[x - ne_]
      local kid = t.key
      local si = ksi[kid]
      if si < 0 then
        si = key(kid)
      end
      tsi[x] = si
    end
    local tord, toff = by_section(nt, tsi, ks.n)
    local TT, TK, TS, TE = double_t(nt), int32_t(nt), double_t(nt), double_t(nt)
    local TR, TD = int32_t(nt), int32_t(nt)
    for p = 0, nt - 1 do
      local x = tord[p]
      local t, rank, dom
      if x < ne_ then
        t, rank, dom = be[x], x, EVENT
      else
        t, rank, dom = bp[x - ne_], x - ne_, PROCESSING
      end
      TT[p], TK[p], TS[p], TE[p], TR[p], TD[p] = t.time_ms, kki[t.key], t.start, t.stop, rank,
        dom
    end
    for k = 0, ks.n - 1 do
      local from, to = toff[k], toff[k + 1]
      if to > from then
        local s = secs[k]
        s.tt, s.tk, s.ts, s.te = cut(TT, from, to, 8), cut(TK, from, to, 4),
          cut(TS, from, to, 8), cut(TE, from, to, 8)
        s.tr, s.td = cut(TR, from, to, 4), cut(TD, from, to, 4)
      end
    end
  end
  return sec
end

-- weir.sessionop's sections, in the general operator's format (repr "general", as weir.windowop
-- keeps the same windows: each in-flight window, its state window when that is another, the
-- contents and count in the state window's, the merging sets, the timers in pop order): the
-- columns laid out by section in C (weir_sessions_snap, from the operator's own arrays), the
-- counts and contents (Lua's, by slot) and the fired flags filled in here. No stand-in
-- subtask, no table per window.
local cols_t = ffi.typeof("weir_sessions_cols_t")

local function snapshot_sessions(node, inst, out, keep)
  local ks = key_sections(node, inst, out, keep)
  local ksi, kki, secs, key, sec = ks.ksi, ks.kki, ks.secs, ks.key, ks.sec
  local sess = inst.sess
  local nkids = C.weir_sessions_kids(sess, nil, 0)
  local kids = int32_t(math.max(nkids, 1))
  C.weir_sessions_kids(sess, kids, nkids)
  for i = 0, nkids - 1 do
    key(kids[i])
  end
  local c = ffi.gc(cols_t(), C.weir_sessions_snap_free)
  local rc = C.weir_sessions_snap(sess, ksi, kki, ks.nk + 1, ks.n, c)
  if rc ~= 0 then
    failure.job_error(("%s: the session windows' checkpoint: %s"):format(node.label,
      ffi.string(C.weir_strerror(rc))))
  end
  local accs, counts, fired = inst.accs, inst.counts, inst.fired
  local m = math.max(c.nwin, 1)
  local N, A = int32_t(m), double_t(m)
  local woff, wslot = c.woff, c.wslot
  local moff, doff, toff = c.moff, c.doff, c.toff
  for k = 0, ks.n - 1 do
    local s = secs[k]
    local from, to = woff[k], woff[k + 1]
    if to > from then
      local numeric, wf = true, nil
      for p = from, to - 1 do
        local slot = wslot[p]
        local v
        if slot > 0 then
          N[p], v = counts[slot] or 0, accs[slot]
          if fired[slot] then
            wf = wf or {}
            wf[#wf + 1] = p - from
          end
        else
          N[p] = 0
        end
        if type(v) == "number" then
          A[p] = v
        else
          numeric = false
        end
      end
      s.n = to - from
      s.wk, s.ws, s.we, s.wn = cut(c.wk, from, to, 4), cut(c.ws, from, to, 8),
        cut(c.we, from, to, 8), cut(N, from, to, 4)
      if numeric then
        s.wa = cut(A, from, to, 8)
      else
        local wv = new_table(to - from, 0)
        for p = from, to - 1 do
          local slot = wslot[p]
          local v = slot > 0 and accs[slot] or nil
          if v ~= nil and type(v) ~= "number" then
            v = keep(v, s, "contents", s.keys[c.wk[p]], c.ws[p], c.we[p])
          end
          wv[p - from + 1] = v
        end
        s.wv = wv
      end
      if wf then
        s.wf = packi(wf)
      end
    end
    from, to = moff[k], moff[k + 1]
    if to > from then
      s.mk, s.mn = cut(c.mk, from, to, 4), cut(c.mn, from, to, 4)
      s.md = cut(c.md, 4 * doff[k], 4 * doff[k + 1], 8)
    end
    from, to = toff[k], toff[k + 1]
    if to > from then
      s.tt, s.tk, s.ts, s.te = cut(c.tt, from, to, 8), cut(c.tk, from, to, 4),
        cut(c.ts, from, to, 8), cut(c.te, from, to, 8)
      s.tr, s.td = cut(c.tr, from, to, 4), cut(c.td, from, to, 4)
    end
  end
  C.weir_sessions_snap_free(ffi.gc(c, nil))
  return sec
end

local function snapshot_fast(node, inst, out, repr, keep)
  local hint = repr == "tumbling" and (inst.cagg
      and C.weir_aggs_stat(inst.cagg, C.WEIR_STORE_OPEN)
      or C.weir_wintab_stat(inst.wtab, C.WEIR_STORE_OPEN))
    or C.weir_slices_stat(inst.slices, C.WEIR_STORE_OPEN)
  local sec = sections(node, inst, repr, aggstate.key_of, out, hint, keep)
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
    for i = 0, (cagg and C.weir_aggs_capacity(cagg) or C.weir_wintab_capacity(inst.wtab)) - 1 do
      local id = cagg and C.weir_aggs_at(cagg, i, e) or C.weir_wintab_at(inst.wtab, i, e)
      if id >= 0 then
        local s, ki = sec(e[0])
        local c = col(s)
        local n = c.n + 1
        c.n = n
        c.wk[n], c.ws[n], c.wn[n] = ki, e[1], inst.counts[id] or 0
        local acc = inst.accs[id]
        if cagg then -- its accumulator's number (avg: the sum; the count is wn)
          C.weir_aggs_get(cagg, e[0], e[1], inst.g_out)
          acc, c.wn[n] = inst.g_out[0], inst.g_out[1]
        end
        if type(acc) ~= "number" then
          c.numeric = false
          acc = keep(acc, s, "accumulator", aggstate.key_of(inst, e[0]), e[1],
            e[1] + node.assigner.size)
        end
        c.wa[n] = acc
      end
    end
  else
    aggstate.sl_sync(node, inst) -- a built-in aggregate's batch first (weir.aggstate)
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
        append(s, "wst", { ki, w[1], w[2], keep(st, s, "window_state",
          aggstate.key_of(inst, w[0]), w[1], w[2]) })
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
---its one section under -1). repr: the operator's ("general", "tumbling", "sliced"), or
---"sessions" for weir.sessionop's, written as "general" sections.
function M.snapshot(node, repr, what)
  local out = {}
  local keep = keeper(what or node.label, out)
  ckvalue.reset_marked()
  local writer = repr
  if repr == "sessions" then -- weir.sessionop's windows, as the general operator's sections
    repr = "general"
  end
  for _, inst in ipairs(node.instances) do
    local sec
    if writer == "sessions" then
      sec = snapshot_sessions(node, inst, out, keep)
    elseif repr == "general" then
      sec = snapshot_general(node, inst, out, keep)
    else
      sec = snapshot_fast(node, inst, out, repr, keep)
    end
    for kid, g in pairs(inst.gstate) do
      if next(g) ~= nil then
        local s, ki = sec(kid)
        local key = repr == "general" and inst.keys[kid] or aggstate.key_of(inst, kid)
        s.gstate[#s.gstate + 1] = { ki, keep(g, s, "global_state", key) }
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
    out[node.keyed and 0 or -1] = { v = repr == "general" and GENERAL_VERSION or VERSION,
                                    repr = repr, subtask = 0, size = a.size, slide = a.slide,
                                    nkeys = 0, keys = {}, gstate = {} }
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
      aggstate.init(inst, node.assigner.size / node.assigner.slide, aggstate.cagg_kind(node),
        aggstate.sliced_kind(node))
    end
    inst.tctx.slot = -1
  end
end

local function check(node, g, sec, repr)
  local a = node.assigner
  local why
  local want = repr == "general" and GENERAL_VERSION or VERSION
  if type(sec) ~= "table" then
    why = "its window section is not a table"
  elseif sec.v ~= want then
    why = ("its window section has format %s, this weir reads %d"):format(tostring(sec.v),
      want)
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
      -- at an equal time before the runs of later old subtasks only (nil: no such run; not
      -- math.huge, which is a timer's time too: the global window's end)
      local r, i = best.r, best.i
      local before, after, seen = nil, nil, false
      for _, h in ipairs(heads) do
        if h == best then
          seen = true
        elseif h.i <= h.r.top then
          local other = h.r.t[h.i]
          if seen then
            after = after and math.min(after, other) or other
          else
            before = before and math.min(before, other) or other
          end
        end
      end
      while i <= r.top do
        local t = r.t[i]
        if t ~= nil then
          if (before and t >= before) or (after and t > after) then
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
  local store, n = inst.store, sec.n or 0
  local slots = new_table(n, 0)
  if n > 0 then
    local wk, ws, we, wn = unpacki(sec.wk), unpackd(sec.ws), unpackd(sec.we), unpacki(sec.wn)
    local wa, wv = sec.wa and unpackd(sec.wa), sec.wv
    local cn, wcl = sec.cn, sec.wc and unpackd(sec.wc)
    local ncell, idx = cn and #cn or 0, {}
    for j = 1, ncell do
      idx[j] = cell_of(node, cn[j])
    end
    local contents = inst.contents
    for i = 0, n - 1 do
      local slot = winstate.open(inst, kids[wk[i]], ws[i], we[i])
      slots[i + 1] = slot
      if wn[i] ~= 0 then
        C.weir_store_count_add(store, slot, wn[i])
      end
      if wcl then
        local base = i * ncell
        for j = 1, ncell do
          local v = wcl[base + j - 1]
          if v == v then
            winstate.state_set(inst, slot, cn[j], idx[j], v)
          end
        end
      end
      if wa then
        contents[slot] = wa[i]
      elseif wv then
        contents[slot] = wv[i + 1]
      end
    end
    for i, t in pairs(sec.wl or {}) do
      for name, v in pairs(t) do
        winstate.state_set(inst, slots[i], name, cell_of(node, name), v)
      end
    end
    for i, st in pairs(sec.wsv or {}) do
      inst.wstate[slots[i]] = st
    end
    if sec.wti then
      local wti, m = unpacki(sec.wti)
      local wtn, wtd, d = unpacki(sec.wtn), unpackd(sec.wtd), 0
      for k = 0, m - 1 do
        local len, list = wtn[k], {}
        for j = 1, len do
          list[j] = wtd[d + j - 1]
        end
        d = d + len
        inst.stamps[slots[wti[k] + 1]] = list
      end
    end
    for i, ts in pairs(sec.wtv or {}) do
      inst.stamps[slots[i]] = ts
    end
    if sec.wf then
      local wf, m = unpacki(sec.wf)
      for k = 0, m - 1 do
        inst.fires[slots[wf[k] + 1]] = true
      end
    end
  end
  if sec.mk then
    local mk, m = unpacki(sec.mk)
    local mn, md, d = unpacki(sec.mn), unpackd(sec.md), 0
    for k = 0, m - 1 do
      local list = {}
      for j = 1, mn[k] do
        list[j] = { start = md[d], stop = md[d + 1], sstart = md[d + 2], sstop = md[d + 3] }
        d = d + 4
      end
      inst.msets[kids[mk[k]]] = list
    end
  end
  if sec.tt then
    local tt, m = unpackd(sec.tt)
    local tk, ts, te = unpacki(sec.tk), unpackd(sec.ts), unpackd(sec.te)
    local tr, td = unpacki(sec.tr), unpacki(sec.td)
    for k = 0, m - 1 do
      add_timer(timers, old, td[k], tr[k], tt[k], kids[tk[k]], ts[k], te[k])
    end
  end
end

local function restore_fast(node, inst, sec, kids, timers, old)
  if sec.wk then
    local wk, n = unpacki(sec.wk)
    local ws, wn = unpackd(sec.ws), unpacki(sec.wn)
    local wa = sec.wa and unpackd(sec.wa)
    for i = 0, n - 1 do
      if inst.cagg then -- a built-in aggregate in C: (v, n), as the snapshot wrote them
        local v = wa and wa[i] or sec.wv[i + 1]
        local rc = type(v) == "number" and C.weir_aggs_set(inst.cagg, kids[wk[i]], ws[i], v, wn[i])
        if not rc or rc == C.WEIR_EINVAL then
          failure.job_error(("%s: cannot restore a window: its accumulator %s is not a "
            .. "built-in aggregate's"):format(node.label, tostring(v)))
        elseif rc < 0 then
          failure.job_error(("%s: cannot restore a window: %s"):format(node.label,
            ffi.string(C.weir_strerror(rc))))
        end
      else
        local id = C.weir_wintab_add(inst.wtab, kids[wk[i]], ws[i])
        if id < 0 then
          failure.job_error(("%s: cannot restore a window: %s"):format(node.label,
            ffi.string(C.weir_strerror(id))))
        end
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
    aggstate.sl_sync(node, inst) -- a running subtask's batch (a rescale) goes first
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
