-- The job of the ts-* cases: a timestamp assigner returning `bad` for the third of five
-- records, feeding both window operators (general: process; fast: reduce). Outside the time
-- range (API.md, Time range) the job fails naming the value, the record and the operator,
-- before the record reaches either window.
local weir = require("weir")

return function(bad)
  local env = weir.env()
  local keyed = env:from_collection({ 1, 2, 3, 4, 5 })
    :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
      :with_timestamp_assigner(function(v) if v == 3 then return bad end return v end))
    :key_by(function() return "k" end)
  keyed:window(weir.windows.tumbling_event_time("10ms"))
    :process(function(_, _, els, out) out("out:" .. #els) end)
    :print()
  keyed:map(function() return 1 end)
    :key_by(function() return "k" end)
    :window(weir.windows.tumbling_event_time("10ms"))
    :reduce(function(a, b) return a + b end)
    :map(function(n) return "fast " .. n end)
    :print()
  env:execute("ts")
end
