-- A custom trigger whose on_event_time fails in a watermark's fire: the job fails naming the
-- operator, subtask, the trigger method (with its script line), key, window and watermark.
local weir = require("weir")
local env = weir.env()
env:replay("input.replay")
  :map(function(line)
    local k, ts = line:match("^(%S+) (%d+)$")
    return { k = k, ts = tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(0)
    :with_timestamp_assigner(function(r) return r.ts end))
  :key_by(function(r) return r.k end)
  :window(weir.windows.tumbling_event_time("100ms"))
  :trigger(weir.trigger{
    on_element = function(_, _, _, w, ctx)
      ctx:register_event_time_timer(w:max_timestamp())
      return weir.CONTINUE
    end,
    on_event_time = function(_, _, _, ctx)
      if ctx:current_watermark() > 100 then
        error("boom")
      end
      return weir.FIRE
    end,
  })
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :sink(function(v) print(v) end)
env:execute()
