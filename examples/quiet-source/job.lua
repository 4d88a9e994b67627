-- The last window must close: a socket job whose input goes quiet. With event time, a window
-- fires only when a newer record pushes the watermark past its end -- so after the last line,
-- the last window waits forever (until the input ends). with_idle_advance lets the watermark
-- follow the clock once the source has been quiet for 5 s: quiet meaning nothing is waiting,
-- neither in weir nor in the socket, so a busy (backpressured) job never closes windows early.
--
--   nc -lk 9999       then type  a,1000  and  a,2000: ~8 s later
--   weir run examples/quiet-source/job.lua            the window closes without new data
--   weir run examples/quiet-source/job.lua -- nofix   it does not (until you close nc)
local weir = require("weir")

local strategy = weir.watermarks.bounded_out_of_orderness(0)
  :with_timestamp_assigner(function(e) return e[2] end)
if weir.args[1] ~= "nofix" then
  strategy = strategy:with_idle_advance("5s")
end

local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }

local lines = env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local key, ts = line:match("^(%w+),(%d+)$")
    if not key then
      error("expected key,timestamp_ms (e.g. a,1000)")
    end
    return { key, tonumber(ts) }
  end)

lines
  :assign_timestamps_and_watermarks(strategy)
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("10s"))
  :process(function(key, ctx, elements, out)
    out(("%s %s n=%d at clock %d watermark %s"):format(key, tostring(ctx:window()), #elements,
      ctx:current_processing_time(), tostring(ctx:current_watermark())))
  end)
  :print()

-- A line that does not parse goes to this side output with its error (on_error), so one typo
-- in nc does not end the job.
lines:get_side_output(errors)
  :map(function(e) return ("skipped %q: %s"):format(e.value, e.error) end)
  :print_to_err()

env:execute("quiet source")
