-- window_all runs as one subtask over both parallel inputs; its watermark is the minimum of
-- the two generators'. The print after it (parallelism 2) is fed round-robin from subtask 0.
local weir = require("weir")

local env = weir.env{ parallelism = 2 }

env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local key, ts = line:match("^(%w+),(%d+)$")
    return { key, tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness(0)
      :with_timestamp_assigner(function(e) return e[2] end))
  :window_all(weir.windows.tumbling_event_time("5s"))
  :reduce(function(a, b) return { a[1] .. b[1], b[2] } end)
  :map(function(e) return e[1] end)
  :print()

env:execute()
