-- kill -9 loop job (tests/ckpt, issue 14 item 7(a)): a file source; keyed tumbling, sliding,
-- session and custom-trigger windows with allowed lateness and late data to side outputs;
-- every result into write_text. Watermarks are punctuated (a custom generator emitting on each
-- record), so the output does not depend on the wall clock and the uninterrupted run is
-- the reference byte for byte.
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
local late = weir.output_tag("late")
local events = env:read_text_file("in.txt")
  :map(function(l)
    local k, ts, v = l:match("^(%S+) (%d+) (%d+)$")
    return { k, tonumber(ts), tonumber(v) }
  end):set_parallelism(1):uid("parse")
  :assign_timestamps_and_watermarks(weir.watermarks.custom{
    on_event = function(self, _, ts, out)
      if not self.max or ts > self.max then self.max = ts end
      out:emit_watermark(self.max - 2000 - 1) -- bounded out of orderness 2 s, per record
    end,
  }:with_timestamp_assigner(function(e) return e[2] end)):set_parallelism(1):uid("ts")
local keyed = events:key_by(function(e) return e[1] end)
local function sum(a, b) return { a[1], a[2], a[3] + b[3] } end
local function show(kind)
  return function(key, ctx, elements, out)
    local n, s = 0, 0
    for _, e in ipairs(elements) do n, s = n + 1, s + e[3] end
    out(("%s %s %s n=%d sum=%d"):format(kind, key, tostring(ctx:window()), n, s))
  end
end
keyed:window(weir.windows.tumbling_event_time("1s")):allowed_lateness("500ms")
  :side_output_late_data(late)
  :reduce(sum, function(key, ctx, elements, out)
    out(("tumbling %s %s sum=%d"):format(key, tostring(ctx:window()), elements[1][3]))
  end):uid("tumbling")
  :write_text("tumbling"):uid("tumbling-out")
keyed:window(weir.windows.sliding_event_time("3s", "1s"))
  :aggregate({ create = function() return 0 end, add = function(e, acc) return acc + e[3] end,
               result = function(acc) return acc end }):uid("sliding")
  :map(function(v) return "sliding " .. v end)
  :write_text("sliding"):uid("sliding-out")
keyed:window(weir.windows.event_time_session("400ms"))
  :process(show("session")):uid("session")
  :write_text("session"):uid("session-out")
-- a custom trigger: fires every 5th element of a window and at its end, with a counter in
-- trigger state and an event-time timer
local every5 = weir.trigger{
  name = "every5",
  on_element = function(_, _, _, w, ctx)
    local c = ctx:state("count")
    local n = (c:get() or 0) + 1
    c:set(n)
    ctx:register_event_time_timer(w:max_timestamp())
    if n % 5 == 0 then return weir.FIRE end
    return weir.CONTINUE
  end,
  on_event_time = function(_, t, w) if t == w:max_timestamp() then return weir.FIRE end
    return weir.CONTINUE end,
  on_processing_time = function() return weir.CONTINUE end,
  clear = function(_, w, ctx) ctx:state("count"):clear()
    ctx:delete_event_time_timer(w:max_timestamp()) end,
}
keyed:window(weir.windows.tumbling_event_time("2s")):trigger(every5)
  :process(show("custom")):uid("custom")
  :write_text("custom"):uid("custom-out")
local tumbling_late = keyed:window(weir.windows.tumbling_event_time("1s"))
  :allowed_lateness("500ms"):side_output_late_data(late):reduce(sum):uid("tumbling2")
tumbling_late:get_side_output(late)
  :map(function(e) return ("late %s %d %d"):format(e[1], e[2], e[3]) end)
  :write_text("late"):uid("late-out")
tumbling_late:map(function(e) return ("sum %s %d"):format(e[1], e[3]) end)
  :write_text("sums"):uid("sums-out")
env:execute("kill-file-windows")
