-- A duration given with --param beyond the longest duration (2^51 ms): the operator's own check
-- names the script line of the call the value reached.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2, 3 })
  :key_by(function() return "k" end)
  :window(weir.windows.tumbling_event_time("10ms"))
  :allowed_lateness(weir.param("allowed_lateness", "0"))
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :print()
env:execute("param")
