-- One source feeding two aligned inputs: a pause of one would stop the other (and could hold
-- the group's minimum forever), so the job fails at start naming both.
local weir = require("weir")
local env = weir.env()
local strategy = weir.watermarks.monotonous():with_watermark_alignment("g", "10s")
local src = env:from_collection({ 1, 2, 3 })
src:assign_timestamps_and_watermarks(strategy):print()
src:map(function(v) return v end):assign_timestamps_and_watermarks(strategy):print()
env:execute()
