-- Benchmark job: generate -> timestamps (monotonous) -> key_by (10,000 keys) -> sliding
-- event-time windows of 60 s every 1 s -> aggregate (count) -> checksum sink, parallelism 1
-- (one core). bench/baseline/sliding.c computes the same in plain C; bench/run checks that both
-- print the same line before it compares their times.
--
--   weir run bench/sliding.lua -- N [agg]
--
-- "agg": the same windows counted by the built-in weir.aggregates.count() with no window
-- function (each fired window emits a weir.aggregates.window_result record: key, start, stop,
-- value; the slices' merges run in C).
--
-- Events are Lua tables { key, ts } made by the generator: event i (0-based) has key i % 10000
-- and timestamp floor(i / 10) ms, as in bench/windows.lua. Each key so gets one event per
-- second, every event lies in 60 windows, and each (key, window) counts about 60 events.
local weir = require("weir")
-- bench/common.lua, found by this file's directory (see there)
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local KEYS = 10000
local SLIDE_MS = 1000

local n = common.record_count("bench/sliding.lua", "1000000")

local floor = math.floor
local variant = weir.args[2] or "lua"
if variant ~= "lua" and variant ~= "agg" then
  error(("bench/sliding.lua: expected agg or nothing, got %q"):format(variant))
end

-- The checksum sink's digest term of a fired window: window starts are >= -59 s, so every term
-- is positive.
local function digest_term(r)
  return (r.key + 1) * (r.start / SLIDE_MS + 60) * r.count
end

local env = weir.env{ parallelism = 1, auto_watermark_interval = common.WATERMARK_INTERVAL }

local windowed = env:generate(function(i) return { i % KEYS, floor(i / 10) } end, { count = n })
  :assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.sliding_event_time("60s", "1s"))
if variant == "agg" then
  windowed:aggregate(weir.aggregates.count())
    :sink(common.checksum_sink(function(r)
      return (r.key + 1) * (r.start / SLIDE_MS + 60) * r.value
    end, nil, "value"))
else
  windowed:aggregate(common.count(), function(key, ctx, counts, out)
    out({ key = key, start = ctx:window().start, count = counts[1] })
  end)
    :sink(common.checksum_sink(digest_term))
end

env:execute("bench sliding")
