-- Sliding processing-time windows (10 s every 5 s): the window comes from the clock when the
-- record arrives, not from the record; each fires when the clock passes its end.
local weir = require("weir")

local env = weir.env{ parallelism = 1 }

env:socket_text_stream("localhost", 9999)
  :key_by(function() return "k" end)
  :window(weir.windows.sliding_processing_time("10s", "5s"))
  :process(function(_, ctx, elements, out)
    local w = ctx:window()
    out(("%d-%d now=%d %s"):format(w.start, w.stop, ctx:current_processing_time(),
      table.concat(elements, " ")))
  end)
  :print()

env:execute()
