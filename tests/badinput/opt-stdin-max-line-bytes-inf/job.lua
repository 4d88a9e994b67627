-- max_line_bytes = inf on stdin: a build error, not whatever int32_t makes of it.
local weir = require("weir")
local env = weir.env()
env:stdin({ max_line_bytes = math.huge }):map(function(s) return "out " .. s end):print()
env:execute("opt")
