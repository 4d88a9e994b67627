-- max_line_bytes at int32_t's maximum is accepted, and lines come through.
local weir = require("weir")
local env = weir.env()
env:read_text_file("input.txt", { max_line_bytes = 2 ^ 31 - 1 })
  :map(function(s) return "out " .. s end):print()
env:execute("opt")
