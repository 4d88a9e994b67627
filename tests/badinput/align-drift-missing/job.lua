-- with_watermark_alignment: max_drift has no default (Flink's has none either).
local weir = require("weir")
local env = weir.env()
local strategy = weir.watermarks.monotonous():with_watermark_alignment("g")
env:from_collection({ 1, 2, 3 }):assign_timestamps_and_watermarks(strategy):print()
env:execute()
