-- Benchmark job: Nexmark q7, "highest bid": env:nexmark_bids (bids made in C, weir.nexmark.bid
-- records) -> timestamps (monotonous, the bid's ts) -> window_all tumbling 10 s event-time
-- windows -> aggregate (the highest bid of the window, the first one on a tie, and the number
-- of bids) -> checksum sink, parallelism 1 (one core). bench/baseline/nexmark_q7.c computes the
-- same from the same bids (runtime/nexmark_gen.h) in plain C; bench/run checks that both print
-- the same line before it compares their times.
--
--   weir run bench/nexmark_q7.lua -- N
--
-- Default generator settings: 10,000 events/s of Nexmark time, seed 0.
local weir = require("weir")
-- bench/common.lua, found by this file's directory (see there)
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local WINDOW_MS = 10000

local n = common.record_count("bench/nexmark_q7.lua", "10000000")

local highest_bid = {
  create = function() return { n = 0, price = -1, auction = 0, bidder = 0 } end,
  add = function(b, acc)
    acc.n = acc.n + 1
    if b.price > acc.price then
      acc.price, acc.auction, acc.bidder = b.price, b.auction, b.bidder
    end
    return acc
  end,
  result = function(acc) return acc end,
}

-- The checksum sink's digest term of one window's highest bid.
local function digest_term(r)
  return (r.start / WINDOW_MS + 1) * (r.price + r.auction + r.bidder)
end

local env = weir.env{ parallelism = 1, auto_watermark_interval = common.WATERMARK_INTERVAL }

env:nexmark_bids{ count = n }
  :assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(function(b) return b.ts end))
  :window_all(weir.windows.tumbling_event_time("10s"))
  :aggregate(highest_bid, function(_, ctx, accs, out)
    local a = accs[1]
    out({ start = ctx:window().start, auction = a.auction, bidder = a.bidder, price = a.price,
          count = a.n })
  end)
  :sink(common.checksum_sink(digest_term))

env:execute("bench nexmark q7")
