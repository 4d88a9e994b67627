-- Unbounded distinct keys in open windows (generate without count -> key_by(i) -> a 1 h
-- tumbling window -> reduce; every record at time 0, so nothing fires), run with
-- --max-memory 64m: the job fails at the limit naming the window operator and the figures,
-- close() runs, and what was printed before the failure is flushed.
local weir = require("weir")
local env = weir.env()
local s = env:generate(function(i) return i end)
s:filter({ filter = function(_, i) return i < 5 end, close = function() print("closed") end })
  :map(function(i) return "out " .. i end)
  :print()
s:assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(function() return 0 end))
  :key_by(function(i) return i end)
  :window(weir.windows.tumbling_event_time("1h"))
  :reduce(function(a, b) return a + b end)
  :map(function(v) return "out " .. v end)
  :print()
env:execute()
