-- 1 MiB of pseudo-random bytes read as text: every line is delivered as it is (NUL, invalid
-- UTF-8, lone CR), none lost.
local weir = require("weir")
local bad = require("badinput")
local env = weir.env()
env:read_text_file(bad.file(bad.bytes(1048576, 7))):map(function() return "out" end):print()
env:execute()
bad.cleanup()
