-- A checkpoint directory whose only checkpoint has a MANIFEST of plain text: weir names the
-- file and refuses it, and with nothing valid left it exits 1 rather than start over.
local weir = require("weir")
local env = weir.env()
env:from_elements(1, 2, 3):map(function(v) return "out " .. v end):print()
env:execute()
