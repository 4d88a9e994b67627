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

spec.finish()
