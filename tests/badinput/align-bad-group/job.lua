-- with_watermark_alignment: the group is a name (a string), not a number.
local weir = require("weir")
local env = weir.env()
local strategy = weir.watermarks.monotonous():with_watermark_alignment(1, "10s")
env:from_collection({ 1, 2, 3 }):assign_timestamps_and_watermarks(strategy):print()
env:execute()
