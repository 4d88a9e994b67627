-- A sliced sliding window whose merge() fails while a watermark fires (the fast operator
-- merges slices): the job fails naming the operator, subtask, key, window and the user's line.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 150, 160 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function() return "k" end)
  :window(weir.windows.sliding_event_time("200ms", "100ms"))
  :aggregate({
    create = function() return 0 end,
    add = function(_, n) return n + 1 end,
    merge = function(a, b)
      if a + b == 3 then
        error("boom in merge")
      end
      return a + b
    end,
    result = function(n) return "out:" .. n end,
  })
  :sink(function(v) print(v) end)
env:execute()
