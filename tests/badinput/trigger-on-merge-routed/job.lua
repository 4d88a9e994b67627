-- Session windows with a trigger whose on_merge fails, with on_error: the record that caused
-- the merge is routed with its key and merged window, and the windows still merge (one
-- session of 3 elements fires). The record is not lost: it is in the merged window.
local weir = require("weir")
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local w = env:from_collection({ 10, 150, 80 })
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(1000)
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function() return "k" end)
  :window(weir.windows.event_time_session("100ms"))
  :trigger(weir.trigger{
    on_element = function(_, _, _, win, ctx)
      ctx:register_event_time_timer(win:max_timestamp())
      return weir.CONTINUE
    end,
    on_event_time = function(_, t, win)
      return t == win:max_timestamp() and weir.FIRE or weir.CONTINUE
    end,
    on_merge = function() error("boom in on_merge") end,
  })
  :process(function(_, ctx, els, out) out(("out:%d %s"):format(#els, tostring(ctx:window()))) end)
w:sink(function(v) print(v) end)
w:get_side_output(errors):sink(function(e)
  print(("fire-failed key=%s window=%s value=%s error=%s"):format(e.key, tostring(e.window),
    tostring(e.value), e.error))
end)
env:execute()
