-- An empty file: no records, a clean end.
local weir = require("weir")
local bad = require("badinput")
local env = weir.env()
env:read_text_file(bad.file("")):map(function() return "out" end):print()
env:execute()
bad.cleanup()
