-- Sliding event-time windows of 10 s every 5 s: each element lands in two windows, which fire
-- as the watermark (bounded out-of-orderness 0) passes their end; the rest at end of input.
local weir = require("weir")

local env = weir.env{ parallelism = 1 }

env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local key, ts = line:match("^(%w+),(%-?%d+)$")
    return { key, tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness(0)
      :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.sliding_event_time("10s", "5s"))
  :aggregate({
    create = function() return 0 end,
    add = function(_, n) return n + 1 end,
    result = function(n) return n end,
  }, function(key, ctx, counts, out)
    out({ key, tostring(ctx:window()), counts[1] })
  end)
  :print()

env:execute()
