-- With on_error, records whose timestamp assigner returns a value outside the time range
-- (beyond +-2^52, +-inf, NaN, a fraction, a string, false, a table) go to the error side
-- output, each naming its value; the two good ones reach the fast window operator (aggregate).
local weir = require("weir")
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local values = { 1, 9.3e18, -9.3e18, 2 ^ 53, 2 ^ 53 + 2, math.huge, -math.huge, 0 / 0, 1.5,
                 "1000", false, {}, 2 }
local stamped = env:from_collection({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(i) return values[i] end))
local keyed = stamped:key_by(function() return "k" end)
keyed:window(weir.windows.tumbling_event_time("10ms"))
  :aggregate({ create = function() return 0 end, add = function(_, n) return n + 1 end,
               result = function(n) return n end, merge = function(a, b) return a + b end })
  :map(function(n) return "out:" .. n end)
  :print()
stamped:get_side_output(errors):map(function(e) return "err " .. e.error end):print()
env:execute("ts")
