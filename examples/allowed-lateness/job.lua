-- Allowed lateness: a window that already fired fires again for each late element that
-- arrives within the lateness, with the event-time trigger re-emitting the whole window, or --
-- with a purging trigger -- only what came since the last fire.
--
--   nc -lk 8888                                 then type lines such as  a,1718157600000
--   weir run examples/allowed-lateness/job.lua -p 1            event-time trigger
--   weir run examples/allowed-lateness/job.lua -p 1 -- purging purging(event_time)
--   weir run examples/allowed-lateness/job.lua --replay examples/allowed-lateness/input.replay
--   weir sweep examples/allowed-lateness/job.lua --replay examples/allowed-lateness/input.replay \
--     --param allowed_lateness=0,1s,3s                     what each lateness costs
--
-- Typing live, use -p 1 (--parallelism 1). At the job's parallelism 2 the lines go round-robin
-- to two watermark generators, and a window's watermark is the lower of the two: typing only
-- `a` lines, each generator sees every other line, so the watermark stays behind the last
-- time you typed and windows fire much later than you expect (typing the sequence of
-- README.md's walkthrough prints nothing until nc is closed). input.replay types a, b and c
-- lines in turn, which moves both generators.
local weir = require("weir")

local purging = weir.args[1] == "purging"
local errors = weir.output_tag("errors")
local env = weir.env{ parallelism = 2, on_error = errors }

local trigger = weir.triggers.event_time()
if purging then
  trigger = weir.triggers.purging(trigger)
end

local lines = env:socket_text_stream("localhost", 8888)
  :map(function(line)
    local key, ts = line:match("^(%w+),(%d+)$")
    if not key then
      error("expected key,timestamp_ms (e.g. a,1718157600000)")
    end
    return { key, tonumber(ts) }
  end)

lines
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness(weir.param("out_of_orderness", 0))
      :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("5s"))
  :trigger(trigger)
  :allowed_lateness(weir.param("allowed_lateness", "3s")) -- kept (and re-fired) until the
                                 -- watermark passes end + 3 s (what-if: weir sweep, README)
  :apply(function(_, window, elements, out)
    print(window.start .. "-" .. window.stop)
    for _, e in ipairs(elements) do out(e[1]) end
  end)
  :print()

-- A line that does not parse goes to this side output with its error (on_error), so one typo
-- in nc does not end the job.
lines:get_side_output(errors)
  :map(function(e) return ("skipped %q: %s"):format(e.value, e.error) end)
  :print_to_err()

env:execute()
