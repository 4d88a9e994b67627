-- A map that fails on some records, with on_error: the failures go to the error side output,
-- the rest to the sink; nothing vanishes.
local weir = require("weir")
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local s = env:from_collection({ "1", "2", "x", "4", "y" })
  :map(function(v) return "out " .. assert(tonumber(v), "not a number") end)
s:print()
s:get_side_output(errors):map(function(e) return "err " .. e.error end):print()
env:execute()
