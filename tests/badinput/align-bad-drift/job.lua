-- with_watermark_alignment: a negative max drift is a build error naming the line.
local weir = require("weir")
local env = weir.env()
local strategy = weir.watermarks.monotonous()
  :with_watermark_alignment("clicks", "-1s")
env:from_collection({ 1, 2, 3 }):assign_timestamps_and_watermarks(strategy):print()
env:execute()
