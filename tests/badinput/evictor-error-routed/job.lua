-- A failing evict_after (after the window function emitted), with on_error: routed with key
-- and window; what the fire emitted stays emitted, the window is cleaned up, the job goes on.
local weir = require("weir")
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local w = env:from_collection({ 1, 2, 150, 152 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function(v) return v % 2 == 0 and "even" or "odd" end)
  :window(weir.windows.tumbling_event_time("100ms"))
  :evictor(weir.evictor{
    evict_after = function(_, elements, _, win)
      if win.start == 100 then
        elements:remove(1)
        error("boom in evict_after")
      end
    end,
  })
  :process(function(_, _, els, out) out("out:" .. #els) end)
w:sink(function(v) print(v) end)
w:get_side_output(errors):sink(function(e)
  print(("fire-failed key=%s window=%s error=%s"):format(e.key, tostring(e.window), e.error))
end)
env:execute()
for _, m in pairs(env:metrics()) do
  print(("left %d windows, %d elements"):format(m.open_windows, m.elements))
end
