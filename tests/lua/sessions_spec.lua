-- Specs for session windows: merging (SEMANTICS §4.5, §5.4, §5.7) and triggers that merge.
local spec = require("spec")
local weir = require("weir")
local it, eq, raises = spec.it, spec.eq, spec.raises
local W, T = weir.windows, weir.triggers
local INF = math.huge

local winjob = require("lib.winjob")

local show = winjob.show

local function run(records, assigner, configure)
  return winjob.run(records, assigner, configure)
end

it("merges windows that touch, not windows 1 ms apart", function()
  eq(run({ { "a", 0 }, { "a", 5000 }, { "b", 0 }, { "b", 5001 }, { wm = INF } },
    W.event_time_session(5000)),
    { { "b", "[0, 5000)", "0" }, { "a", "[0, 10000)", "0 5000" },
      { "b", "[5001, 10001)", "5001" } })
end)

it("keeps the surviving state window's elements first after a merge", function()
  eq(run({ { "a", 0 }, { "a", 20000 }, { "a", 12000 }, { "a", 15000 }, { wm = INF } },
    W.event_time_session(5000)),
    { { "a", "[0, 5000)", "0" }, { "a", "[12000, 25000)", "12000 20000 15000" } })
end)

it("a window inside an existing session does not merge", function()
  eq(run({ { "a", 0 }, { "a", 2000 }, { "a", 1000 }, { wm = INF } },
    W.event_time_session(5000)), { { "a", "[0, 7000)", "0 2000 1000" } })
end)

it("accepts a late element that bridges into a live session", function()
  local got, late = run({ { "a", 0 }, { "a", 6000 }, { wm = 5500 }, { "a", 3000 },
                          { wm = INF } },
    W.event_time_session(5000), function(x) return x:allowed_lateness(2000):process(show) end)
  eq(got, { { "a", "[0, 5000)", "0" }, { "a", "[0, 11000)", "0 6000 3000" } })
  eq(late, {})
end)

it("drops a late element that opens a session of its own", function()
  local got, late = run({ { "a", 20000 }, { wm = 19000 }, { "a", 1000 }, { wm = INF } },
    W.event_time_session(5000))
  eq(got, { { "a", "[20000, 25000)", "20000" } })
  eq(late, { { "a", 1000 } })
end)

it("merges count trigger state and event-time timers (on_merge)", function()
  eq(run({ { "a", 0 }, { "a", 8000 }, { "a", 4000 }, { "a", 100 }, { wm = INF } },
    W.event_time_session(5000), function(x)
      return x:trigger(T.count(4)):process(show)
    end), { { "a", "[0, 13000)", "0 8000 4000 100" } })
  eq(run({ { "a", 0 }, { "a", 8000 }, { "a", 4000 }, { wm = 12999 }, { wm = INF } },
    W.event_time_session(5000)), { { "a", "[0, 13000)", "0 8000 4000" } })
end)

it("merges reduce and aggregate state with their functions", function()
  eq(run({ { "a", 1 }, { "a", 9000 }, { "a", 5000 }, { wm = INF } },
    W.event_time_session(5000), function(x)
      return x:reduce(function(p, q) return { p[1], p[2] + q[2] } end)
    end), { { "a", 14001 } })
  eq(run({ { "a", 1 }, { "a", 9000 }, { "a", 5000 }, { wm = INF } },
    W.event_time_session(5000), function(x)
      return x:aggregate({
        create = function() return 0 end,
        add = function(_, n) return n + 1 end,
        result = function(n) return n end,
        merge = function(p, q) return p + q end,
      })
    end), { 3 })
end)

it("takes the gap from each element with dynamic sessions", function()
  eq(run({ { "a", 0, 10000 }, { "a", 9000, 1 }, { "a", 12000, 1 }, { wm = INF } },
    W.dynamic_event_time_session(function(e) return e[3] end)),
    { { "a", "[0, 10000)", "0 9000" }, { "a", "[12000, 12001)", "12000" } })
  raises(function()
    run({ { "a", 0, 0 } }, W.dynamic_event_time_session(function(e) return e[3] end))
  end, "the gap must be a whole number of ms in 1..2^51, got 0")
end)

it("refuses a trigger that cannot merge, and window_state()", function()
  local env = weir.env()
  raises(function()
    env:from_elements(1):key_by(function(x) return x end)
      :window(W.event_time_session(10)):trigger(T.delta(1, function() return 0 end))
      :process(function() end)
  end, "cannot merge")
  raises(function()
    run({ { "a", 0 }, { wm = INF } }, W.event_time_session(10), function(x)
      return x:process(function(_, ctx) ctx:window_state() end)
    end)
  end, "not available for merging")
  raises(function()
    env:from_elements(1):key_by(function(x) return x end)
      :window(W.event_time_session(10))
      :aggregate({ create = function() end, add = function() end, result = function() end })
  end, "needs a merge")
end)

it("leaves no state behind after sessions are cleaned up", function()
  local _, _, env = run({ { "a", 0 }, { "a", 4000 }, { "a", 20000 }, { "a", 12000 },
                          { "a", 15000 }, { wm = INF } }, W.event_time_session(5000))
  local _, m = next(env:metrics())
  eq({ m.open_windows, m.elements, m.event_timers }, { 0, 0, 0 })
end)

spec.finish()
