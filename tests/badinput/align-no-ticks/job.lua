-- Alignment updates run on the periodic tick: without ticks a paused input could never resume.
local weir = require("weir")
local env = weir.env{ auto_watermark_interval = 0 }
local strategy = weir.watermarks.monotonous():with_watermark_alignment("g", "10s")
env:from_collection({ 1, 2, 3 }):assign_timestamps_and_watermarks(strategy):print()
env:execute()
