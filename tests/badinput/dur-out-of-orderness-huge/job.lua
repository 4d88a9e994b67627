-- An out-of-orderness bound beyond the longest duration: a build error naming the text.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2, 3 })
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness("106751991167d")
    :with_timestamp_assigner(function(v) return v end))
  :print()
env:execute("dur")
