-- kill -9 loop job (tests/ckpt, issue 14 item 7(b) for what works without window state): a
-- replay source on the virtual clock; records routed by key to two timestamp generators with
-- idleness and idle-advance (key b's subtask goes quiet and idle); a rebalance into one
-- process function whose valve combines the two channels; the watermark and the processing
-- time each record sees are in the output, so the clock, the generators' idleness and the
-- valve must all come back exactly.
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
env:replay("in.replay")
  :map(function(l)
    local k, v, ts = l:match("^(%S+) (%d+) (%d+)$")
    return { k, tonumber(v), tonumber(ts) }
  end):set_parallelism(1):uid("parse")
  :key_by(function(e) return e[1] end)
  :map(function(e) return e end):uid("route")
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness("1s")
    :with_timestamp_assigner(function(e) return e[3] end)
    :with_idleness("2s"):with_idle_advance("4s")):uid("ts")
  :rebalance()
  :process(function(e, ctx, out)
    out(("%s %d ts=%s wm=%s pt=%d"):format(e[1], e[2], tostring(ctx:timestamp()),
      tostring(ctx:current_watermark()), ctx:current_processing_time()))
  end):set_parallelism(1):uid("show")
  :write_text("out.txt"):set_parallelism(1):uid("out")
env:execute("kill-replay-stateless")
