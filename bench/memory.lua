-- Benchmark job: what an open window costs in memory. generate -> timestamps (monotonous) ->
-- key_by -> tumbling 5 s event-time windows -> aggregate (count) -> checksum sink, parallelism
-- 1. All N events fall in the window [0, 5000), so every (key, window) stays open until the
-- end of input, when all fire at once: with KEYS = N the peak holds N open windows, with
-- KEYS = 1 one window and the same events. bench/run reports (peak RSS with N keys - peak RSS
-- with 1 key) / N as bytes per open window. bench/baseline/memory.c computes the same in plain
-- C with a hash map of counters.
--
--   weir run bench/memory.lua -- N KEYS
--
-- Event i (0-based) is a Lua table { i % KEYS, floor(i * 5000 / N) }.
local weir = require("weir")
-- bench/common.lua, found by this file's directory (see there)
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local n = tonumber(weir.args[1] or "1000000")
local keys = tonumber(weir.args[2] or tostring(n))
if not n or n < 1 or n % 1 ~= 0 or not keys or keys < 1 or keys % 1 ~= 0 then
  error("bench/memory.lua: expected a record count and a key count")
end

local floor = math.floor

-- The checksum sink's digest term of a fired window.
local function digest_term(r)
  return (r.key + 1) * r.count
end

local env = weir.env{ parallelism = 1 }

env:generate(function(i) return { i % keys, floor(i * 5000 / n) } end, { count = n })
  :assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("5s"))
  :aggregate(common.count(), function(key, _, counts, out)
    out({ key = key, count = counts[1] })
  end)
  :sink(common.checksum_sink(digest_term))

env:execute("bench memory")
