-- The last window must close: a socket job whose input goes quiet. With event time, a window
-- fires only when a newer record pushes the watermark past its end -- so after the last line,
-- the last window waits forever (until the input ends). with_idle_advance lets the watermark
-- follow the clock once the source has been quiet for 5 s: quiet meaning nothing is waiting,
-- neither in weir nor in the socket, so a busy (backpressured) job never closes windows early.
--
--   nc -lk 9999       then type  a,1000  and  a,2000  and wait ~9 s
--   weir run examples/quiet-source/job.lua            the window closes without new data
--   weir run examples/quiet-source/job.lua -- nofix   it does not (until you close nc)
local weir = require("weir")

local strategy = weir.watermarks.bounded_out_of_orderness(0)
  :with_timestamp_assigner(function(e) return e[2] end)
if weir.args[1] ~= "nofix" then
  strategy = strategy:with_idle_advance("5s")
end

local env = weir.env()

env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local key, ts = line:match("^(%w+),(%d+)$")
    return { key, tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(strategy)
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("10s"))
  :process(function(key, ctx, elements, out)
    out(("%s %s n=%d at clock %d watermark %s"):format(key, tostring(ctx:window()), #elements,
      ctx:current_processing_time(), tostring(ctx:current_watermark())))
  end)
  :print()

env:execute("quiet source")
