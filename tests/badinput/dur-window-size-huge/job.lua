-- A duration beyond the longest one (2^51 ms): a build error naming the text and the line.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2, 3 })
  :key_by(function() return "k" end)
  :window(weir.windows.tumbling_event_time("106751991167d"))
  :process(function(_, _, els, out) out("out:" .. #els) end)
  :print()
env:execute("dur")
