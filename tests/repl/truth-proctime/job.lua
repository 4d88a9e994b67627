-- The inspectors on processing-time windows (issue 16 item 3): :why waits for processing time,
-- :draw draws the records on a processing-time axis with the clock as its line.
local weir = require("weir")
local env = weir.env()
env:manual()
  :key_by(function(word) return word end)
  :window(weir.windows.tumbling_processing_time("10s"))
  :process(function(key, ctx, elements, out)
    out(("%s %s %d"):format(key, tostring(ctx:window()), #elements))
  end)
  :print()
env:execute("words")
