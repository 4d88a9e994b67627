-- A trigger that registers a timer at a string time from on_event_time, run with
-- --check-triggers: the contract check fails the job naming the trigger method, key, window.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 150 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function() return "k" end)
  :window(weir.windows.tumbling_event_time("100ms"))
  :trigger(weir.trigger{
    name = "stringly",
    on_element = function(_, _, _, w, ctx)
      ctx:register_event_time_timer(w:max_timestamp())
      return weir.CONTINUE
    end,
    on_event_time = function(_, _, w, ctx)
      if w.start == 100 then
        ctx:register_event_time_timer("100")
      end
      return weir.FIRE
    end,
  })
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :sink(function(v) print(v) end)
env:execute()
