-- A custom processing-time trigger whose on_processing_time fails when a timer fires during
-- the replay: the job fails naming the trigger method, key, window and the timer.
local weir = require("weir")
local env = weir.env()
env:replay("input.replay")
  :key_by(function(v) return v end)
  :window(weir.windows.tumbling_processing_time("1s"))
  :trigger(weir.trigger{
    name = "my_pt",
    on_element = function(_, _, _, w, ctx)
      ctx:register_processing_time_timer(w:max_timestamp())
      return weir.CONTINUE
    end,
    on_processing_time = function(_, _, _, ctx)
      if ctx.key == "b" then
        error("boom in on_processing_time")
      end
      return weir.FIRE
    end,
  })
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :sink(function(v) print(v) end)
env:execute()
