-- An evictor whose evict_before fails in a fire at the end of input: the job fails naming the
-- operator, subtask, evictor method, key, window and the user's line.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2, 150 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function(v) return v % 2 == 0 and "even" or "odd" end)
  :window(weir.windows.tumbling_event_time("100ms"))
  :evictor(weir.evictor{
    name = "my_evictor",
    evict_before = function(_, _, _, w)
      if w.start == 100 then
        error("boom in evictor")
      end
    end,
  })
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :sink(function(v) print(v) end)
env:execute()
