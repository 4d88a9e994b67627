-- Timeouts beyond the longest duration (2^51 ms): build errors naming the text; the first one
-- met fails the build (with_idleness here), so the others are checked by the Lua specs.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2, 3 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end)
    :with_idleness("9999999999999999999s"))
  :print()
env:execute("dur")
