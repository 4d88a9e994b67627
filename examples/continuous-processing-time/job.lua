-- Processing-time windows of 10 s that also fire every 3 s of processing time.
-- Fire times are multiples of 3 s since the epoch, not offsets from the window start, and the
-- last one is capped at the window's end, where it shares the timer of the window's cleanup.
--
--   weir run examples/continuous-processing-time/job.lua --replay \
--     examples/continuous-processing-time/input.replay
local weir = require("weir")

local env = weir.env{ parallelism = 2 }

env:socket_text_stream("localhost", 8888)
  :key_by(function(word) return word end)
  :window(weir.windows.tumbling_processing_time("10s"))
  :trigger(weir.triggers.continuous_processing_time("3s"))
  :process(function(_, ctx, elements, out)
    local w = ctx:window()
    print(("%d-%d now=%d"):format(w.start, w.stop, ctx:current_processing_time()))
    for _, word in ipairs(elements) do out(word) end
  end)
  :print()

env:execute()
