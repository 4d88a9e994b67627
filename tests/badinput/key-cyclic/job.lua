-- A key that contains itself, into a window: the job fails naming the key selector, the record
-- and why (a cycle), not with a stack overflow inside weir's error path.
local weir = require("weir")
local cyclic = {}
cyclic[1] = cyclic
local env = weir.env()
env:from_collection({ 1 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function() return cyclic end)
  :window(weir.windows.tumbling_event_time("10ms"))
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :print()
env:execute()
