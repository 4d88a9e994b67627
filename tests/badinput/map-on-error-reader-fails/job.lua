-- with on_error, the operator that reads the error side output fails on an error record: that
-- fails the job, naming that operator and the error record it was given.
local weir = require("weir")
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local s = env:from_collection({ "1", "x", "3" })
  :map(function(v) return "out " .. assert(tonumber(v), "not a number") end)
s:print()
s:get_side_output(errors)
  :map(function(e) return "err " .. e.missing end)
  :print()
env:execute()
