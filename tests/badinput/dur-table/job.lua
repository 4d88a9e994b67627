-- A table where a duration is expected: named by its type, not by its address.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2, 3 })
  :key_by(function() return "k" end)
  :window(weir.windows.tumbling_event_time({ size = "5s" }))
  :reduce(function(a, b) return a + b end)
  :print()
env:execute("dur")
