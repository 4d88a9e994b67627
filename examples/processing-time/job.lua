-- Processing-time windows of 10 s with the default trigger: a window fires once, when the
-- clock passes its end, with everything that arrived in it. Windows are aligned to multiples
-- of 10 s since the epoch (as in Flink), so a window closes 0-10 s after its first word, not
-- 10 s after it.
--
--   nc -lk 8888                               then type words
--   weir run examples/processing-time/job.lua
--   weir run examples/processing-time/job.lua --replay examples/processing-time/input.replay
local weir = require("weir")

local env = weir.env{ parallelism = 2 }

env:socket_text_stream("localhost", 8888)
  :key_by(function(word) return word end)
  :window(weir.windows.tumbling_processing_time("10s"))
  :trigger(weir.triggers.processing_time())        -- the default; shown for the comparison
  :process(function(_, ctx, elements, out)
    local w = ctx:window()
    print(("%d-%d now=%d"):format(w.start, w.stop, ctx:current_processing_time()))
    for _, word in ipairs(elements) do out(word) end
  end)
  :print()

env:execute()
