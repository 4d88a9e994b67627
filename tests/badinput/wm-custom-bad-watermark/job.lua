-- A custom generator emitting a watermark beyond 2^53 (where doubles skip odd numbers): the
-- job fails naming the value and the line.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2 })
  :assign_timestamps_and_watermarks(weir.watermarks.custom{
    on_event = function(_, _, _, out) out:emit_watermark(2 ^ 53 + 2) end,
  }:with_timestamp_assigner(function(v) return v end))
  :map(function(v) return "out " .. v end)
  :print()
env:execute()
