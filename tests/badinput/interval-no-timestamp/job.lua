-- An interval join runs in event time: a record without a timestamp (here the right input has
-- no assign_timestamps_and_watermarks) fails the job naming the operator and the record.
local weir = require("weir")
local env = weir.env()
local left = env:from_collection({ 1, 2 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
local right = env:from_collection({ 7 })
left:key_by(function() return "k" end)
  :interval_join(right:key_by(function() return "k" end)):between(0, 1)
  :process(function(l, r, _, out) out("out " .. l .. r) end)
  :print()
env:execute("no timestamp")
