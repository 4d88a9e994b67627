-- max_line_bytes beyond int32_t (C takes it as one): a build error, not a silent 1 MiB.
local weir = require("weir")
local env = weir.env()
env:read_text_file("input.txt", { max_line_bytes = 3e9 })
  :map(function(s) return "out " .. s end):print()
env:execute("opt")
