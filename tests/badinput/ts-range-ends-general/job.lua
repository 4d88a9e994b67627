-- Timestamps at the ends of the time range (+-2^52) with the longest window (2^51 ms) and
-- lateness: every window is exact and fires, on the general window operator.
local weir = require("weir")
local env = weir.env()
local T = 2 ^ 52
env:from_collection({ -T, -T + 1, 0, T - 1, T })
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(2 ^ 51)
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function() return "k" end)
  :window(weir.windows.tumbling_event_time(2 ^ 51))
  :allowed_lateness(2 ^ 51)
:process(function(_, ctx, els, out) out("out:" .. #els .. " " .. tostring(ctx:window())) end)
  :print()
env:execute("ts")
