-- kill -9 loop job (tests/ckpt): a file source, timestamps and watermarks at parallelism 1,
-- a rebalance to parallelism 2 (its round-robin counters are state), flat_map, filter, a
-- process function with a side output, two write_text sinks (a directory each).
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
local big = weir.output_tag("big")
local main = env:read_text_file("in.txt")
  :map(function(l)
    local k, ts, v = l:match("^(%S+) (%d+) (%d+)$")
    return { k, tonumber(ts), tonumber(v) }
  end):set_parallelism(1):uid("parse")
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness("1s")
    :with_timestamp_assigner(function(e) return e[2] end)):set_parallelism(1):uid("ts")
  :rebalance()
  :flat_map(function(e, out)
    out(e)
    if e[3] % 7 == 0 then out({ e[1] .. "x", e[2], e[3] * 2 }) end
  end):uid("fan")
  :filter(function(e) return e[3] % 5 ~= 0 end):uid("drop5")
  :process(function(e, ctx, out)
    -- (not the watermark: on the real clock it is emitted every 200 ms of wall time, so it
    -- differs from run to run, killed or not)
    local line = ("%s %d %d ts=%d"):format(e[1], e[2], e[3], ctx:timestamp())
    if e[3] > 900 then
      ctx:output(big, line)
    else
      out(line)
    end
  end):uid("route")
main:write_text("out"):uid("out")
main:get_side_output(big):write_text("big"):uid("big")
env:execute("kill-file-stateless")
