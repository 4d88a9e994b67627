-- A 3 MiB line between short ones: it is not delivered, and weir says so and counts it.
local weir = require("weir")
local bad = require("badinput")
local text = "a\n" .. ("x"):rep(3 * 1048576) .. "\nb\nc"
local env = weir.env()
env:read_text_file(bad.file(text)):map(function() return "out" end):print()
env:execute()
bad.cleanup()
