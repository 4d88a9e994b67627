-- A punctuated watermark generator (watermarks.custom): a "flush" record carries the
-- watermark; it is emitted after the record has gone downstream.
local weir = require("weir")

local env = weir.env{ parallelism = 1 }

env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local key, ts = line:match("^(%w+),(%d+)$")
    return { key, tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(
    weir.watermarks.custom{
      on_event = function(_, e, ts, out)
        if e[1] == "flush" then out:emit_watermark(ts) end
      end,
    }:with_timestamp_assigner(function(e) return e[2] end))
  :filter(function(e) return e[1] ~= "flush" end)
  :key_by(function() return "all" end)
  :window(weir.windows.tumbling_event_time("5s"))
  :process(function(_, ctx, elements, out)
    local keys = {}
    for i, e in ipairs(elements) do keys[i] = e[1] end
    out(tostring(ctx:window()) .. " " .. table.concat(keys, " "))
  end)
  :print()

env:execute()
