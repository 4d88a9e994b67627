-- A replay file whose times reach the end of the time range, 2^52 ms: the records come, and
-- a window-less job ends normally.
local weir = require("weir")
local env = weir.env()
env:replay("input.replay"):map(function(s) return "out " .. s end):print()
env:execute("replay")
