-- kill -9 loop job (tests/ckpt): watermark alignment on the virtual clock. Two replays, the
-- fast one 10 minutes ahead in event time, aligned within 5 s: the fast one is paused and
-- resumed again and again. Pauses are not in checkpoints (a restored job pauses again at its
-- first update), so every restore must still give the uninterrupted run's windows.
local weir = require("weir")
local env = weir.env()
local function input(path)
  return env:replay(path)
    :map(function(l)
      local k, v, ts = l:match("^(%S+) (%d+) (%d+)$")
      return { k, tonumber(v), tonumber(ts) }
    end):uid("parse " .. path)
    :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness("1s")
      :with_timestamp_assigner(function(e) return e[3] end)
      :with_watermark_alignment("g", "5s", "200ms")):uid("ts " .. path)
end
input("slow.replay"):union(input("fast.replay"))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("10s"))
  :reduce(function(a, b) return { a[1], a[2] + b[2], a[3] } end,
    function(key, ctx, elements, out)
      out(("%s %s sum=%d"):format(key, tostring(ctx:window()), elements[1][2]))
    end):uid("windows")
  :write_text("et"):uid("et-out")
env:execute("kill-replay-aligned")
