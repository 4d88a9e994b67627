-- --restore of a savepoint whose MANIFEST is cut short: refused, naming the file.
local weir = require("weir")
local env = weir.env()
env:from_elements(1, 2, 3):map(function(v) return "out " .. v end):print()
env:execute()
