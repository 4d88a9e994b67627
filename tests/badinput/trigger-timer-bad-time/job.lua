-- A user trigger registering an event-time timer at NaN: the job fails naming the trigger,
-- the time and the trigger's line.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function() return "k" end)
  :window(weir.windows.global())
  :trigger(weir.trigger{ name = "nan_timer", on_element = function(_, _, _, _, ctx)
    ctx:register_event_time_timer(0 / 0)
    return weir.CONTINUE
  end })
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :print()
env:execute()
