-- processing_timeout: fire a window 5 s of processing time after its first element, or its
-- last one with reset = true (Flink's ProcessingTimeoutTrigger; docs/SEMANTICS.md,
-- Triggers). The window's own end (windows are aligned to multiples of 10 s of the clock)
-- still fires it too: a word typed in the second half of a window fires at the window's end,
-- before its timeout. With clear_on_timeout (the default) the timeout also clears the inner
-- trigger -- and with it the window's end-of-window timer, so a window that gets no further
-- element would never fire again nor be cleaned up.
--
--   weir run examples/processing-timeout/job.lua -- [reset] [keep]
--     reset   reset_timer_on_new_record = true
--     keep    clear_on_timeout = false
local weir = require("weir")

local reset, clear = false, true
for _, a in ipairs(weir.args) do
  if a == "reset" then reset = true elseif a == "keep" then clear = false end
end

local env = weir.env{ parallelism = 2 }

env:socket_text_stream("localhost", 8888)
  :key_by(function(word) return word end)
  :window(weir.windows.tumbling_processing_time("10s"))
  :trigger(weir.triggers.processing_timeout(weir.triggers.processing_time(), "5s", reset, clear))
  :process(function(_, ctx, elements, out)
    local w = ctx:window()
    print(("%d-%d now=%d"):format(w.start, w.stop, ctx:current_processing_time()))
    for _, word in ipairs(elements) do out(word) end
  end)
  :print()

env:execute()
