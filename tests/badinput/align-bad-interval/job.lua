-- with_watermark_alignment: an update interval of 0 would update at every tick forever.
local weir = require("weir")
local env = weir.env()
local strategy = weir.watermarks.monotonous():with_watermark_alignment("g", "10s", 0)
env:from_collection({ 1, 2, 3 }):assign_timestamps_and_watermarks(strategy):print()
env:execute()
