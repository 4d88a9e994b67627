-- kill -9 loop job (tests/ckpt, issue 14 item 7(b)): a replay source on the virtual clock;
-- keyed processing-time tumbling and sliding windows; event-time tumbling windows behind two
-- generators with idleness and idle-advance (key b's subtask goes quiet); everything into
-- write_text. On the virtual clock every fire is at a fixed time, so the uninterrupted run is
-- the reference byte for byte.
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
local events = env:replay("in.replay")
  :map(function(l)
    local k, v, ts = l:match("^(%S+) (%d+) (%d+)$")
    return { k, tonumber(v), tonumber(ts) }
  end):set_parallelism(1):uid("parse")
local keyed = events:key_by(function(e) return e[1] end)
local function sum(a, b) return { a[1], a[2] + b[2], a[3] } end
local function show(kind)
  return function(key, ctx, elements, out)
    out(("%s %s %s sum=%d pt=%d"):format(kind, key, tostring(ctx:window()), elements[1][2],
      ctx:current_processing_time()))
  end
end
keyed:window(weir.windows.tumbling_processing_time("1s")):reduce(sum, show("pt-tumbling"))
  :uid("pt-tumbling"):write_text("pt_tumbling"):uid("pt-tumbling-out")
keyed:window(weir.windows.sliding_processing_time("3s", "1s")):reduce(sum, show("pt-sliding"))
  :uid("pt-sliding"):write_text("pt_sliding"):uid("pt-sliding-out")
keyed:map(function(e) return e end):uid("route")
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness("1s")
    :with_timestamp_assigner(function(e) return e[3] end)
    :with_idleness("2s"):with_idle_advance("4s")):uid("ts")
  :window_all(weir.windows.tumbling_event_time("2s")):reduce(sum, show("et-all"))
  :uid("et-all"):write_text("et_all"):uid("et-all-out")
env:execute("kill-replay-windows")
