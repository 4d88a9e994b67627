-- A failing on_event_time with on_error: routed with key and window; it counts as CONTINUE, so
-- the window is cleaned up unfired at its cleanup time. The trigger counts its elements in
-- its state and prints "err:K" before failing, so nothing vanishes.
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
      local n = ctx:state("n")
      n:set((n:get() or 0) + 1)
      ctx:register_event_time_timer(win:max_timestamp())
      return weir.CONTINUE
    end,
    on_event_time = function(_, _, win, ctx)
      if ctx.key == "b" and win.start == 0 then
        print("err:" .. ctx:state("n"):get())
        error("boom")
      end
      return weir.FIRE
    end,
    clear = function(_, _, ctx) ctx:state("n"):clear() end,
  })
  :process(function(_, _, els, out) out("out:" .. #els) end)
w:sink(function(v) print(v) end)
w:get_side_output(errors):sink(function(e)
  print(("fire-failed key=%s window=%s error=%s"):format(e.key, tostring(e.window), e.error))
end)
env:execute()
for _, m in pairs(env:metrics()) do
  print(("left %d windows, %d elements"):format(m.open_windows, m.elements))
end
