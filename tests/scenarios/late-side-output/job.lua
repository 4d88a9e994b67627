-- Records behind the watermark for every window they belong to are late: with
-- side_output_late_data they go to that side output, with their own timestamp.
local weir = require("weir")

local env = weir.env{ parallelism = 1 }
local late = weir.output_tag("late")

local windowed = env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local key, ts = line:match("^(%w+),(%d+)$")
    return { key, tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness(0)
      :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("5s"))
  :side_output_late_data(late)
  :process(function(key, ctx, elements, out)
    out(("%s %s %d"):format(key, tostring(ctx:window()), #elements))
  end)

windowed:print()
windowed:get_side_output(late)
  :process(function(e, ctx, out) out({ e[1], e[2], ctx:timestamp() }) end)
  :print("late")

env:execute()
