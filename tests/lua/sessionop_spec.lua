-- Specs for weir.sessionop, the session-window operator: on random inputs (out of order, late,
-- within allowed lateness, merges of two and more sessions, watermarks anywhere) it must give
-- exactly what weir.windowop gives -- the same fires with the same values, in the same order,
-- and the same late records -- and show its state (windowing.state, status) and write its
-- checkpoints in the general operator's shapes, so that a checkpoint of one restores on the
-- other.
local spec = require("spec")
local weir = require("weir")
local windowing = require("weir.windowing")
local sessionop = require("weir.sessionop")
local checkpoint = require("weir.checkpoint")
local it, eq = spec.it, spec.eq
local W = weir.windows

local winjob = require("lib.winjob")
local punctuated, count_sum = winjob.punctuated, winjob.count_sum

local function max_reduce(a, b)
  if b[3] > a[3] then return b end
  return a
end

local CASES = {
  { name = "static gap, aggregate", assigner = function() return W.event_time_session(10) end,
    lateness = 0, fn = "aggregate" },
  { name = "static gap, lateness, aggregate + process",
    assigner = function() return W.event_time_session(8) end, lateness = 15, fn = "process" },
  { name = "static gap, reduce", assigner = function() return W.event_time_session(5) end,
    lateness = 0, fn = "reduce" },
  { name = "static gap, lateness, reduce + process",
    assigner = function() return W.event_time_session(12) end, lateness = 6,
    fn = "reduce_process" },
  { name = "dynamic gap, lateness, aggregate + process",
    assigner = function()
      return W.dynamic_event_time_session(function(e) return e[3] * 2 end)
    end, lateness = 9, fn = "process" },
}

local function configure(case)
  return function(w)
    if case.fn == "aggregate" then
      return w:aggregate(count_sum)
    elseif case.fn == "reduce" then
      return w:reduce(max_reduce)
    elseif case.fn == "reduce_process" then
      return w:reduce(max_reduce, function(key, ctx, r, out)
        local win = ctx:window()
        out({ key, tostring(win), r[1][2], r[1][3], ctx:current_watermark() })
      end)
    end
    return w:aggregate(count_sum, function(key, ctx, r, out)
      local g = ctx:global_state()
      g.n = (g.n or 0) + 1
      out({ key, tostring(ctx:window()), r[1], g.n })
    end)
  end
end

-- Runs case on records, on weir.sessionop (session true) or weir.windowop: what fired, and the
-- late records.
local function run(case, records, session)
  sessionop.disabled = not session
  local used = sessionop.used
  local ok, got, late = pcall(winjob.run, records, case.assigner(), configure(case),
    { lateness = case.lateness })
  sessionop.disabled = false
  assert(ok, got)
  eq(sessionop.used - used, session and 1 or 0, "the operator the job ran on")
  return got, late
end

spec.describe("sessionop equals the general operator", function()
  for _, case in ipairs(CASES) do
    it(case.name .. " on random inputs", function()
      for seed = 1, 12 do
        math.randomseed(seed)
        local recs = winjob.random_records(400, { "a", "b", 0, 7, -3, 2.5 })
        local got, late = run(case, recs, true)
        local want, want_late = run(case, recs, false)
        eq(got, want, case.name .. " seed " .. seed)
        eq(late, want_late, case.name .. " seed " .. seed .. " (late)")
        assert(#got > 20, "few fires")
      end
    end)
  end
  it("a merge of three sessions and more keeps the first's state window", function()
    local recs = { { "a", 0, 5 }, { "a", 20, 5 }, { "a", 40, 5 }, { "a", 60, 5 },
                   { "a", 3, 60 }, { wm = math.huge } }
    local case = { assigner = function()
      return W.dynamic_event_time_session(function(e) return e[3] end)
    end, lateness = 0, fn = "reduce_process" }
    eq(run(case, recs, true), run(case, recs, false))
    eq(run(case, recs, true), { { "a", "[0, 65)", 3, 60, math.huge } })
  end)
end)

-- The state of the job's window node as it was when the record marked `look` arrived (before
-- the window saw it): windowing.state's lists, status's subtask, a checkpoint's decoded bytes.
local function state_at(records, look, lateness, session)
  sessionop.disabled = not session
  local watch = winjob.watch()
  local env = weir.env{ parallelism = 1 }
  local seen
  env:from_collection(records)
    :map(function(e)
      if e == look then
        local node = watch.nodes[1].node
        local inst = node.instances[1]
        local part = windowing.checkpoint_parts(nil, node).state
        seen = {
          state = windowing.state(node, inst),
          windows = windowing.windows(node, inst),
          stats = windowing.stats(node, inst),
          bytes = checkpoint.encode_state(1, { { name = "w", key_group = 0,
                                                 value = part.snapshot(), raw = part.raw } }),
        }
      end
      return e
    end)
    :assign_timestamps_and_watermarks(punctuated)
    :filter(function(e) return e.wm == nil end)
    :key_by(function(e) return e[1] end)
    :window(W.event_time_session(10))
    :allowed_lateness(lateness)
    :aggregate(count_sum)
    :collect()
  local ok, err = pcall(env.execute, env)
  watch.stop()
  sessionop.disabled = false
  assert(ok, err)
  seen.stats.store_bytes = nil -- each operator's own memory
  return seen
end

spec.describe("sessionop's state is the general operator's", function()
  local records = { { "a", 0, 1 }, { "a", 5, 2 }, { "b", 3, 1 }, { "a", 30, 1 }, { "a", 14, 1 },
                    { wm = 20 }, { "a", 11, 1 }, { "b", 40, 1 }, { "a", 22, 4 }, { "c", 1, 1 } }
  local look = records[#records]
  it("windowing.state, the open windows and the stats", function()
    local s, g = state_at(records, look, 7, true), state_at(records, look, 7, false)
    eq(s.state, g.state)
    eq(s.windows, g.windows)
    eq(s.stats, g.stats)
    -- a merged session shows its state window, the timers of a fired window its cleanup
    local by = {}
    for _, w in ipairs(s.state.windows) do
      by[w.key .. tostring(w.window)] = w
    end
    eq(tostring(by["a[0, 40)"].state_window), "[0, 10)")
    eq(by["a[0, 40)"].contents, 10)
    eq(#s.state.timers, 4)
  end)
  -- the job's rest after a restore of bytes (a checkpoint taken at `look`), on either operator
  local function rest(bytes, wm, session)
    sessionop.disabled = not session
    local instantiate = windowing.instantiate
    windowing.instantiate = function(j, n)
      instantiate(j, n)
      windowing.checkpoint_parts(j, n).state.restore(
        assert(checkpoint.decode_state(bytes, 1))[1].value)
      n.instances[1].watermark = wm
    end
    local after = {}
    for k = #records, #records + 0 do
      after[#after + 1] = records[k]
    end
    after[#after + 1] = { "a", 38, 1 }
    after[#after + 1] = { wm = math.huge }
    local env = weir.env{ parallelism = 1 }
    local got = env:from_collection(after)
      :assign_timestamps_and_watermarks(punctuated)
      :filter(function(e) return e.wm == nil end)
      :key_by(function(e) return e[1] end)
      :window(W.event_time_session(10))
      :allowed_lateness(7)
      :aggregate(count_sum, function(key, ctx, r, out)
        out({ key, tostring(ctx:window()), r[1] })
      end)
      :collect()
    local ok, err = pcall(env.execute, env)
    windowing.instantiate = instantiate
    sessionop.disabled = false
    assert(ok, err)
    return got:values()
  end
  it("a checkpoint of either operator restores on both", function()
    local s, g = state_at(records, look, 7, true), state_at(records, look, 7, false)
    local want = rest(g.bytes, 20, false)
    eq(want, { { "a", "[0, 48)", 11 }, { "b", "[40, 50)", 1 } })
    eq(rest(g.bytes, 20, true), want)
    eq(rest(s.bytes, 20, true), want)
    eq(rest(s.bytes, 20, false), want)
  end)
end)

-- A checkpoint's window sections as plain facts, whichever operator wrote them: per key group
-- its windows (key, start, stop, count, contents, fired) sorted, its merging sets by key, its
-- timers (rank, time, key, window, domain) in rank order, its global states by key.
local function facts(bytes)
  local ffi = require("ffi")
  local function col(s, ct, width)
    return ffi.cast(ct, s or ""), s and #s / width or 0
  end
  local out = {}
  for g, sec in pairs(assert(checkpoint.decode_state(bytes, 1))[1].value) do
    local f = { windows = {}, msets = {}, timers = {}, gstate = {} }
    local wk, n = col(sec.wk, "const int32_t *", 4)
    local ws, we = col(sec.ws, "const double *", 8), col(sec.we, "const double *", 8)
    local wn = col(sec.wn, "const int32_t *", 4)
    local wa = sec.wa and col(sec.wa, "const double *", 8)
    local fired = {}
    local wf, nf = col(sec.wf, "const int32_t *", 4)
    for i = 0, nf - 1 do
      fired[wf[i]] = true
    end
    for i = 0, n - 1 do
      local v
      if wa then v = wa[i] else v = sec.wv[i + 1] end
      f.windows[#f.windows + 1] = { sec.keys[wk[i]], ws[i], we[i], wn[i], v, fired[i] or false }
    end
    table.sort(f.windows, function(a, b)
      return tostring(a[1]) .. " " .. a[2] .. " " .. a[3] < tostring(b[1]) .. " " .. b[2] .. " "
        .. b[3]
    end)
    local mk, nm = col(sec.mk, "const int32_t *", 4)
    local mn, md, d = col(sec.mn, "const int32_t *", 4), col(sec.md, "const double *", 8), 0
    for i = 0, nm - 1 do
      local list = {}
      for j = 1, mn[i] do
        list[j] = { md[d], md[d + 1], md[d + 2], md[d + 3] }
        d = d + 4
      end
      f.msets[tostring(sec.keys[mk[i]])] = list
    end
    local tt, nt = col(sec.tt, "const double *", 8)
    local tk, tr = col(sec.tk, "const int32_t *", 4), col(sec.tr, "const int32_t *", 4)
    local ts, te = col(sec.ts, "const double *", 8), col(sec.te, "const double *", 8)
    local td = col(sec.td, "const int32_t *", 4)
    for i = 0, nt - 1 do
      f.timers[#f.timers + 1] = { tr[i], tt[i], sec.keys[tk[i]], ts[i], te[i], td[i] }
    end
    for _, gs in ipairs(sec.gstate) do
      f.gstate[tostring(sec.keys[gs[1]])] = gs[2]
    end
    f.n, f.v, f.repr, f.subtask = n, sec.v, sec.repr, sec.subtask
    out[g] = f
  end
  return out
end

spec.describe("sessionop's checkpoint sections (made in C) are the general operator's", function()
  for _, case in ipairs(CASES) do
    it(case.name .. ": the same facts at random points, restored on either operator", function()
      for seed = 1, 6 do
        math.randomseed(100 + seed)
        local recs = winjob.random_records(300, { "a", "b", 0, 7, -3, 2.5 })
        local look = recs[math.random(math.floor(#recs / 2), #recs)]
        while look.wm do
          look = recs[math.random(1, #recs)]
        end
        local function at(session)
          sessionop.disabled = not session
          local watch = winjob.watch()
          local bytes
          local ok, err = pcall(winjob.run, recs, case.assigner(), configure(case), {
            lateness = case.lateness,
            each = function(e)
              if e == look then
                local part = windowing.checkpoint_parts(nil, watch.nodes[1].node).state
                bytes = checkpoint.encode_state(1, { { name = "w", key_group = 0,
                                                       value = part.snapshot(),
                                                       raw = part.raw } })
              end
            end,
          })
          watch.stop()
          sessionop.disabled = false
          assert(ok, err)
          return assert(bytes)
        end
        local s, g = at(true), at(false)
        local fs = facts(s)
        eq(fs, facts(g), case.name .. " seed " .. seed)
        local windows = 0
        for _, f in pairs(fs) do
          windows = windows + f.n
        end
        assert(windows > 0, "no open windows at the snapshot")
        -- restored on the other operator and back, the sections are the same facts again
        for _, session in ipairs({ true, false }) do
          sessionop.disabled = not session
          local watch = winjob.watch()
          local again
          local ok, err = pcall(winjob.run, { { "zz", 0, 1 } }, case.assigner(),
            configure(case), {
              lateness = case.lateness,
              each = function()
                local node = watch.nodes[1].node
                local part = windowing.checkpoint_parts(nil, node).state
                part.restore(assert(checkpoint.decode_state(s, 1))[1].value)
                again = checkpoint.encode_state(1, { { name = "w", key_group = 0,
                                                       value = part.snapshot(),
                                                       raw = part.raw } })
              end,
            })
          watch.stop()
          sessionop.disabled = false
          assert(ok, err)
          eq(facts(again), fs, case.name .. " seed " .. seed .. " restored on "
            .. (session and "sessionop" or "the general operator"))
        end
      end
    end)
  end
end)

spec.finish()
