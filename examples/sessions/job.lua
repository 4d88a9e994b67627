-- User activity sessions: a session lasts while a user clicks at least every 30 minutes.
-- Session windows start as [click, click + 30m) and merge when they overlap or touch; a click
-- arriving late can still bridge two sessions into one.
--
--   nc -lk 9999       then type  user,timestamp_ms   e.g.  alice,1718157600000
--   weir run examples/sessions/job.lua
local weir = require("weir")

local function hms(ms)
  return os.date("!%H:%M:%S", math.floor(ms / 1000))
end

local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }

local parsed = env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local user, ts = line:match("^(%w+),(%d+)$")
    if not user then
      error("expected user,timestamp_ms (e.g. alice,1718157600000)")
    end
    return { user, tonumber(ts) }
  end)

parsed
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness("10s")
      :with_timestamp_assigner(function(c) return c[2] end))
  :key_by(function(c) return c[1] end)
  :window(weir.windows.event_time_session("30m"))
  :process(function(user, ctx, clicks, out)
    local w = ctx:window()
    out(("%s %s-%s %d click(s)"):format(user, hms(w.start), hms(w.stop), #clicks))
  end)
  :print()

-- A line that does not parse goes to this side output with its error (on_error), so one typo
-- in nc does not end the job.
parsed:get_side_output(errors)
  :map(function(e) return ("skipped %q: %s"):format(e.value, e.error) end)
  :print_to_err()

env:execute("sessions")
