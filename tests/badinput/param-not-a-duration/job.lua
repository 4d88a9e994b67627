-- A --param value that is not a number or a duration, for a number default: an error naming
-- the weir.param call's line, the parameter and the value.
local weir = require("weir")
local env = weir.env()
local ooo = weir.param("out_of_orderness", 0)
env:from_collection({ 1, 2, 3 })
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(ooo)
    :with_timestamp_assigner(function(x) return x end))
  :map(function(x) return "out " .. x end)
  :print()
env:execute("param")
