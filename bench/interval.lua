-- Benchmark job: two generated inputs -> monotonous timestamps -> key_by (10,000 keys) ->
-- interval join between(-2, 2) ms -> checksum sink, parallelism 1 (one core). N records in
-- all, N / 2 on each side: left i has key i % 10000 and timestamp floor(i / 5) ms, right i
-- the same key and floor(i / 5) + 1 ms, so every left record joins exactly the right record
-- of its index (a key's next records are 2 s away), and each side's buffer of a key holds
-- about one timestamp when the other side's record comes. Monotonous inputs are never late
-- and the result does not depend on how the two generators' batches interleave (the sink
-- keeps an order-independent checksum). bench/baseline/interval.c computes the same in
-- plain C, and bench/run checks that both print the same line before it compares their times.
--
--   weir run bench/interval.lua -- N
local weir = require("weir")
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local KEYS = 10000

local n = common.record_count("bench/interval.lua", "10000000")
local half = math.floor(n / 2)
local floor = math.floor
local ev = weir.record_type("ev", { "int32_t key", "double ts" })
local res = weir.record_type("res", { "int32_t key", "double lts", "double rts",
  "int32_t count" })

local env = weir.env{ parallelism = 1, auto_watermark_interval = common.WATERMARK_INTERVAL }

local function input(shift)
  return env:generate(function(i) return ev(i % KEYS, floor(i / 5) + shift) end,
      { count = half })
    :assign_timestamps_and_watermarks(
      weir.watermarks.monotonous():with_timestamp_assigner(function(e) return e.ts end))
    :key_by(function(e) return e.key end)
end

input(0):interval_join(input(1)):between(-2, 2)
  :process(function(l, r, _, out) out(res(l.key, l.ts, r.ts, 1)) end)
  :sink(common.checksum_sink(function(r)
    return (r.key + 1) * (r.lts + 1) + r.rts
  end, "pairs"))

env:execute("bench interval")
