-- A REPL session: a window function fails for key "b" in a watermark's fires on sliding windows
-- (no on_error, so the job fails); the state at the end is the general operator's (recorded
-- with require("weir.aggwindow").disabled = true): the windows of the failing time that the
-- fires had not reached are still there.
local weir = require("weir")
local env = weir.env()
env:manual()
  :map(function(line)
    local k, ts = line:match("^(%w+),(%d+)$")
    return { k, tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(0)
    :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.sliding_event_time("10s", "5s"))
  :aggregate({ create = function() return 0 end, add = function(_, c) return c + 1 end,
               result = function(c) return c end, merge = function(a, b) return a + b end },
             function(key, ctx, res, out)
    if key == "b" then error("no b") end
    out({ key, tostring(ctx:window()), res[1] })
  end)
  :print()
env:execute("fire error")
