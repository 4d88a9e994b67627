local weir = require("weir")
local env = weir.env()
local stop_at = tonumber(weir.args[1])
local records = env:read_text_file("in.txt"):map(function(l)
    local k, n, ts, kind = l:match("(%S+) (%d+) (%d+) (%a)")
    n, ts = tonumber(n), tonumber(ts)
    if n == stop_at and kind == "o" then
      os.execute("kill -TERM $PPID") -- the shell's parent: weir, which drains and saves
    end
    return { k, n, ts, kind == "o" }
  end):set_parallelism(1):uid("parse")
  :assign_timestamps_and_watermarks(weir.watermarks.custom{
    on_event = function(_, v, ts, out) if v[4] and v[2] % 50 == 0 then out:emit_watermark(ts - 1) end end,
  }:with_timestamp_assigner(function(v) return v[3] end)):set_parallelism(1):uid("ts")
local keyed = records:key_by(function(v) return v[1] end)
local late1, late2 = weir.output_tag("late1"), weir.output_tag("late2")
local fmt = function(v) return v[1] .. " " .. v[2] .. " " .. v[3] end
local tumbling = keyed:window(weir.windows.tumbling_event_time(1000))
  :side_output_late_data(late1):reduce(function(a, b)
    return { a[1], a[2] + b[2], math.max(a[3], b[3]), true } end):uid("win")
tumbling:map(fmt):uid("winfmt"):write_text("windows.txt"):set_parallelism(1):uid("windows")
tumbling:get_side_output(late1):map(fmt):uid("late1fmt")
  :write_text("late1.txt"):set_parallelism(1):uid("late1")
local sliding = keyed:window(weir.windows.sliding_event_time(2000, 1000)):allowed_lateness(1000)
  :side_output_late_data(late2):aggregate({
    create = function() return 0 end, add = function(v, acc) return acc + v[2] end,
    result = function(acc) return acc end, merge = function(a, b) return a + b end },
    function(key, ctx, sums, out)
      out(("%s %s %d"):format(key, tostring(ctx:window()), sums[1])) end):uid("slide")
sliding:write_text("sliding.txt"):set_parallelism(1):uid("sliding")
sliding:get_side_output(late2):map(fmt):uid("late2fmt")
  :write_text("late2.txt"):set_parallelism(1):uid("late2")
keyed:window(weir.windows.event_time_session(700)):allowed_lateness(200)
  :process(function(key, ctx, els, out)
    local w = ctx:window()
    out(("%s [%d,%d) %d"):format(key, w.start, w.stop, #els)) end):uid("sess")
  :write_text("sessions.txt"):set_parallelism(1):uid("sessions")
env:execute()
