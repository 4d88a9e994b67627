-- A user trigger's event-time timer at +inf (the end of time) fires at the end of input.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2, 3 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function() return "k" end)
  :window(weir.windows.global())
  :trigger(weir.trigger{
    on_element = function(_, _, _, _, ctx)
      ctx:register_event_time_timer(math.huge)
      return weir.CONTINUE
    end,
    on_event_time = function() return weir.FIRE end,
  })
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :print()
env:execute()
