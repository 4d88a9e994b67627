-- Benchmark job: Nexmark q5, "hot items": env:nexmark_bids (bids made in C, weir.nexmark.bid
-- records) -> timestamps (monotonous, the bid's ts) -> key_by auction -> sliding event-time
-- windows of 10 s every 2 s -> aggregate (count of bids per auction and window) -> key_by the
-- window's start -> tumbling 2 s windows (each holds exactly the counts of one sliding window,
-- which carry its max timestamp) -> the auction(s) with the most bids in that window ->
-- checksum sink, parallelism 1 (one core). bench/baseline/nexmark_q5.c computes the same from
-- the same bids (runtime/nexmark_gen.h) in plain C; bench/run checks that both print the same
-- line before it compares their times.
--
--   weir run bench/nexmark_q5.lua -- N
--
-- Default generator settings: 10,000 events/s of Nexmark time (bids are 46 of every 50
-- events), seed 0. Timestamps never go back, so no record is late.
local weir = require("weir")
-- bench/common.lua, found by this file's directory (see there)
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local SLIDE_MS = 2000

local n = common.record_count("bench/nexmark_q5.lua", "10000000")

-- Per window: the highest count and every auction that has it (in arrival order).
local hot_auctions = {
  create = function() return { max = 0, auctions = {} } end,
  add = function(r, acc)
    if r.count > acc.max then
      acc.max, acc.auctions = r.count, { r.auction }
    elseif r.count == acc.max then
      acc.auctions[#acc.auctions + 1] = r.auction
    end
    return acc
  end,
  result = function(acc) return acc end,
}

-- The checksum sink's digest term of one hot auction: window starts are >= -8 s (the first
-- bids lie in windows that start before 0), so every factor is positive.
local function digest_term(r)
  return (r.auction + 1) * (r.start / SLIDE_MS + 5) * r.count
end

local env = weir.env{ parallelism = 1, auto_watermark_interval = common.WATERMARK_INTERVAL }

env:nexmark_bids{ count = n }
  :assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(function(b) return b.ts end))
  :key_by(function(b) return b.auction end)
  :window(weir.windows.sliding_event_time("10s", "2s"))
  :aggregate(common.count(), function(auction, ctx, counts, out)
    out({ auction = auction, start = ctx:window().start, count = counts[1] })
  end)
  :key_by(function(r) return r.start end)
  :window(weir.windows.tumbling_event_time("2s"))
  :aggregate(hot_auctions, function(start, _, hots, out)
    local h = hots[1]
    for i = 1, #h.auctions do
      out({ auction = h.auctions[i], start = start, count = h.max })
    end
  end)
  :sink(common.checksum_sink(digest_term, "hot"))

env:execute("bench nexmark q5")
