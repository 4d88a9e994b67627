-- Benchmark job: generate -> timestamps (monotonous) -> key_by (10,000 keys) -> sliding
-- event-time windows of 60 s every 1 s -> aggregate (count) -> checksum sink, parallelism 1
-- (one core). bench/baseline/sliding.c computes the same in plain C; bench/run checks that both
-- print the same line before it compares their times.
--
--   weir run bench/sliding.lua -- N [agg|lua] [KEYS]
--
-- "agg": the same windows counted by the built-in weir.aggregates.count() with no window
-- function (each fired window emits a weir.aggregates.window_result record: key, start, stop,
-- value; the slices' merges run in C).
--
-- Events are Lua tables { key, ts } made by the generator: event i (0-based) has key i % KEYS
-- (10,000 unless given) and timestamp floor(i / 10) ms, as in bench/windows.lua: 10,000 events
-- per second of event time, and every event lies in 60 windows. With 10,000 keys each key gets
-- one event per second, each (key, window) counts about 60 events, and 600,000 windows are
-- open; bench/checkpoint also runs KEYS = 167 (~10,000 open windows, each counting ~3,600).
-- bench/run's row is the 10,000 keys.
local weir = require("weir")
-- bench/common.lua, found by this file's directory (see there)
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local SLIDE_MS = 1000

local n = common.record_count("bench/sliding.lua", "1000000")

local floor = math.floor
local variant = weir.args[2] or "lua"
if variant ~= "lua" and variant ~= "agg" then
  error(("bench/sliding.lua: expected agg, lua or nothing, got %q"):format(variant))
end
local KEYS = tonumber(weir.args[3] or "10000")
if not KEYS or KEYS < 1 or KEYS % 1 ~= 0 then
  error(("bench/sliding.lua: expected a key count, got %q"):format(tostring(weir.args[3])))
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
