-- An aggregate whose result() fails for one window, on the fast window operator, with on_error:
-- routed with key and window; the other windows fire, and state is cleaned up.
local weir = require("weir")
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local w = env:replay("input.replay")
  :map(function(line)
    local k, ts = line:match("^(%S+) (%d+)$")
    return { k = k, ts = tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(0)
    :with_timestamp_assigner(function(r) return r.ts end))
  :key_by(function(r) return r.k end)
  :window(weir.windows.tumbling_event_time("100ms"))
  :aggregate({
    create = function() return { n = 0 } end,
    add = function(r, acc) acc.n = acc.n + 1 acc.b = r.k == "b" and r.ts < 100 return acc end,
    result = function(acc)
      if acc.b then
        print("err:" .. acc.n)
        error("boom in result")
      end
      return "out:" .. acc.n
    end,
  })
w:sink(function(v) print(v) end)
w:get_side_output(errors):sink(function(e)
  print(("fire-failed key=%s window=%s error=%s"):format(e.key, tostring(e.window), e.error))
end)
env:execute()
for label, m in pairs(env:metrics()) do
  print(("left %s: %d windows, %d timers"):format(label, m.open_windows, m.event_timers))
end
