-- A trigger whose clear() fails, with on_error: routed with key and window, and the window's
-- state is dropped anyway (nothing is left open at the end).
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
  :trigger(weir.trigger{
    on_element = function(_, _, _, win, ctx)
      ctx:state("seen"):set(true)
      ctx:register_event_time_timer(win:max_timestamp())
      return weir.CONTINUE
    end,
    on_event_time = function() return weir.FIRE end,
    clear = function(_, win, ctx)
      if win.start == 0 then
        error("boom in clear")
      end
      ctx:state("seen"):clear()
    end,
  })
  :process(function(_, _, els, out) out("out:" .. #els) end)
w:sink(function(v) print(v) end)
w:get_side_output(errors):sink(function(e)
  print(("fire-failed key=%s window=%s error=%s"):format(e.key, tostring(e.window), e.error))
end)
env:execute()
for _, m in pairs(env:metrics()) do
  print(("left %d windows, %d elements, %d timers"):format(m.open_windows, m.elements,
    m.event_timers))
end
