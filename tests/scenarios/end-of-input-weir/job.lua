-- weir's end-of-input policy: when the last source ends, pending processing-time windows
-- fire as if their time had come (the clock reads the timer's time + 1 while they fire).
local weir = require("weir")

local env = weir.env{ parallelism = 1, end_of_input = weir.args[1] }

env:socket_text_stream("localhost", 9999)
  :key_by(function(w) return w end)
  :window(weir.windows.tumbling_processing_time("10s"))
  :process(function(key, ctx, elements, out)
    local w = ctx:window()
    out(("%s %d-%d now=%d n=%d"):format(key, w.start, w.stop, ctx:current_processing_time(),
      #elements))
  end)
  :print()

env:execute()
