-- on_timer fails for odd keys, with on_error: each failure goes to the error side output with
-- its key and timer, the other timers fire; nothing vanishes.
local weir = require("weir")
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local s = env:from_collection({ 1, 2, 3, 4, 5 })
  :key_by(function(v) return v end)
  :process({
    process = function(_, v, ctx) ctx:timer_service():register_event_time_timer(v * 10) end,
    on_timer = function(_, t, ctx, out)
      if ctx:current_key() % 2 == 1 then error("odd key") end
      out("out " .. t)
    end,
  })
s:print()
s:get_side_output(errors):map(function(e)
  return ("err %s key %s %s"):format(e.error, e.key, e.timer)
end):print()
env:execute()
