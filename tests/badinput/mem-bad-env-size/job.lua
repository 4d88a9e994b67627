-- A max_memory that is not a size: a build error naming the script line and the value.
local weir = require("weir")
local env = weir.env{ max_memory = "lots" }
env:from_collection({ 1 }):print()
env:execute()
