-- Late records dropped without side_output_late_data: counted, and the first one named with its
-- timestamp, key, subtask and the watermark that made it late (not only "2 dropped").
local weir = require("weir")
local env = weir.env()
env:socket_text_stream("localhost", 9999) -- replaced by input.replay (expect)
  :map(function(l)
    local k, t = l:match("^(%a+),(%d+)$")
    return { k, tonumber(t) }
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("5s"))
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :print()
env:execute("late")
