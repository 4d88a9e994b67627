-- A replay file whose times leave the time range (the clock goes up to 2^52 ms): an error
-- naming the file, the line and the text, before any record (not "no runtime").
local weir = require("weir")
local env = weir.env()
env:replay("input.replay"):map(function(s) return "out " .. s end):print()
env:execute("replay")
