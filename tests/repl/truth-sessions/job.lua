-- The inspectors on session windows (issue 16 item 3): the merged windows with their elements,
-- a fired session kept for allowed lateness, :status with the generator's watermark, :draw.
local weir = require("weir")
local env = weir.env()
env:manual()
  :map(function(line)
    local k, ts = line:match("^(%w+),(%d+)$")
    return { k, tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(0)
    :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.event_time_session("5s"))
  :allowed_lateness("2s")
  :process(function(key, ctx, elements, out) out({ key, tostring(ctx:window()), #elements }) end)
  :print()
env:execute("sessions")
