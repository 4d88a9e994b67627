-- Clicks per user per minute from JSON lines into Lua tables (format = "json", no record), at
-- parallelism 2: nested members arrive as tables, null in an object is left out, a malformed
-- line goes to on_error naming its line and column; the counts print as JSON with Flink's
-- subtask prefix. Event time, bounded out-of-orderness 5 s, tumbling one-minute windows.
local weir = require("weir")

local errors = weir.output_tag("errors")
local env = weir.env{ parallelism = 2, on_error = errors }

local clicks = env:read_text_file("clicks.jsonl", { format = "json" })

clicks
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness("5s")
      :with_timestamp_assigner(function(c) return c.ts end))
  :key_by(function(c) return c.user.name end)
  :window(weir.windows.tumbling_event_time("1m"))
  :process(function(user, ctx, cs, out)
    local pages = {}
    for i, c in ipairs(cs) do
      pages[i] = c.page or weir.null
    end
    out({ user = user, start = ctx:window().start, clicks = #cs, pages = pages })
  end)
  :print{ format = "json" }

clicks:get_side_output(errors)
  :map(function(e) return { line = e.value, error = e.error } end)
  :print{ id = "bad", format = "json" }

env:execute()
