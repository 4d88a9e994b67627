-- "1.5s": durations are whole parts; the message gives the milliseconds to write.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2, 3 })
  :key_by(function() return "k" end)
  :window(weir.windows.tumbling_event_time("1.5s"))
  :reduce(function(a, b) return a + b end)
  :print()
env:execute("dur")
