-- NUL bytes, invalid UTF-8, CRLF, blank lines, a CR alone and a last line without a newline:
-- each line is one record, delivered as it is (one "\r" before "\n" is stripped).
local weir = require("weir")
local bad = require("badinput")
local text = "a\0b\n\255\254\253\n\r\nc\r\n\n\n\rd\r\r\ne\0"
local env = weir.env()
env:read_text_file(bad.file(text)):map(function(l) return "out " .. ("%q"):format(l) end):print()
env:execute()
bad.cleanup()
