-- Benchmark job: generate -> timestamps (bounded out-of-orderness 5 s) -> key_by (10,000 keys)
-- -> event-time session windows (gap 5 s) -> aggregate (count, with merge) -> checksum sink,
-- parallelism 1 (one core). bench/baseline/sessions.c computes the same in plain C; bench/run
-- checks that both print the same line before it compares their times.
--
--   weir run bench/sessions.lua -- N
--
-- Events are Lua tables { key, ts } made by the generator. Event i (0-based) is the j-th event
-- (j = floor(i / 10000)) of key k = i % 10000. A key's events come in bursts of 8: burst
-- g = floor(j / 8) starts at g * 20 s + floor(k / 10) ms, and its m-th event (m = j % 8) lies
-- OFFSETS[m] seconds into it: 0, 1, 2, 8, 4, 9, 10, 11. So each burst is one session of 8
-- events (the next burst starts 9 s after its last event), and inside it the event at 8 s first
-- opens a second session that the event at 4 s, arriving after it, merges with the first: one
-- merge of two sessions per burst, besides every event extending its session. Arrival is out of
-- order by at most 4,999 ms, so with a 5 s bound nothing is late.
local weir = require("weir")
-- bench/common.lua, found by this file's directory (see there)
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local KEYS = 10000
local BURST_MS = 20000
local OFFSETS = { [0] = 0, 1000, 2000, 8000, 4000, 9000, 10000, 11000 }

local n = common.record_count("bench/sessions.lua", "10000000")

local floor = math.floor

local function event(i)
  local k = i % KEYS
  local j = floor(i / KEYS)
  return { k, floor(j / 8) * BURST_MS + OFFSETS[j % 8] + floor(k / 10) }
end

-- The checksum sink's digest term of a fired session: below 2^53.
local function digest_term(r)
  return (r.key + 1) * ((r.start + 3 * r.stop) % 65536 + 1) * r.count
end

local env = weir.env{ parallelism = 1, auto_watermark_interval = common.WATERMARK_INTERVAL }

env:generate(event, { count = n })
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness("5s"):with_timestamp_assigner(function(e)
      return e[2]
    end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.event_time_session("5s"))
  :aggregate(common.count(), function(key, ctx, counts, out)
    local w = ctx:window()
    out({ key = key, start = w.start, stop = w.stop, count = counts[1] })
  end)
  :sink(common.checksum_sink(digest_term, "sessions"))

env:execute("bench sessions")
