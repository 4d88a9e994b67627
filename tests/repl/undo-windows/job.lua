-- :undo in a window job (a tumbling reduce with allowed lateness and a sliding aggregate):
-- going back puts the open windows, their timers, the late records and the watermark where
-- they were, and the same commands again print the same (DISABLED: see that file).
local weir = require("weir")
local env = weir.env()
local keyed = env:manual()
  :map(function(line)
    local k, ts = line:match("^(%w+),(%d+)$")
    return { k, tonumber(ts), 1 }
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(0)
    :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
keyed:window(weir.windows.tumbling_event_time("10s"))
  :allowed_lateness("3s")
  :reduce(function(a, b) return { a[1], a[2], a[3] + b[3] } end,
    function(key, ctx, sums, out) out({ key, tostring(ctx:window()), sums[1][3] }) end)
  :print()
keyed:window(weir.windows.sliding_event_time("10s", "5s"))
  :aggregate({ create = function() return 0 end, add = function(e, acc) return acc + e[3] end,
               result = function(acc) return acc end, merge = function(a, b) return a + b end })
  :print()
env:execute("repl undo windows")
