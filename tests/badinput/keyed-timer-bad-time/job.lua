-- A keyed process function registering an event-time timer at NaN: the record fails naming the
-- call, the value, the user's line, the operator, the key and the record.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2 })
  :key_by(function(v) return v end)
  :process(function(_, ctx)
    ctx:timer_service():register_event_time_timer(0 / 0)
  end)
  :print()
env:execute()
