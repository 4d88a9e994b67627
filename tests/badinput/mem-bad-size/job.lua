-- Never runs: --max-memory 5x is a usage error.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1 }):print()
env:execute()
