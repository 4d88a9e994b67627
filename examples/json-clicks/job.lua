-- Clicks per user per minute, from JSON lines such as
--   {"user":"alice","ts":1718157600000,"page":"/home"}
-- read straight into typed records (format = "json", record = click: parsed in C, no Lua table
-- per line), counted per user in tumbling one-minute event-time windows and printed as JSON.
-- A line that is not such a click goes to the error side output, which is printed too.
--
--   weir run examples/json-clicks/job.lua                reads clicks.jsonl next to this file
--   weir run examples/json-clicks/job.lua -- other.jsonl
--   weir run examples/json-clicks/job.lua --replay examples/json-clicks/input.replay
local weir = require("weir")

local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
local path = weir.args[1] or (here .. "/clicks.jsonl")

local click = weir.record_type("click", { "string[32] user", "double ts", "string[64] page" })
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }

local clicks = env:read_text_file(path, { format = "json", record = click })

clicks
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness("5s")
      :with_timestamp_assigner(function(c) return c.ts end))
  :key_by(function(c) return c.user end)
  :window(weir.windows.tumbling_event_time("1m"))
  :aggregate({
    create = function() return 0 end,
    add = function(_, n) return n + 1 end,
    result = function(n) return n end,
  }, function(user, ctx, counts, out)
    local w = ctx:window()
    out({ user = user, minute = os.date("!%Y-%m-%dT%H:%M", math.floor(w.start / 1000)),
      clicks = counts[1] })
  end)
  :print{ format = "json" }

clicks:get_side_output(errors)
  :map(function(e) return e.error end)
  :print("bad")

env:execute("json clicks")
