-- NaN keys (of both signs, alone and in tuples) into keyed windows on both window operators:
-- as in Flink every NaN is one key, and nothing fails with "table index is NaN".
local weir = require("weir")
local nan = 0 / 0
local keys = { nan, -nan, 1, { nan, 1 }, { -nan, 1 }, nan }
local env = weir.env{ parallelism = 2 }
local keyed = env:from_collection({ 1, 2, 3, 4, 5, 6 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function(v) return keys[v] end)
-- general operator: one window of 3 NaN elements, one of the 2 tuples, one of key 1
keyed:window(weir.windows.tumbling_event_time("100ms"))
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :sink(function(v) print(v) end) -- no "N> " prefix: the runner counts "out:K"
-- fast operator: the same windows, counted (not part of the in/out count)
keyed:window(weir.windows.tumbling_event_time("100ms"))
  :aggregate({ create = function() return 0 end, add = function(_, n) return n + 1 end,
               result = function(n) return "count " .. n end })
  :sink(function(v) print(v) end)
env:execute()
