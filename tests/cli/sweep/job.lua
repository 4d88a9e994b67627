-- Allowed lateness (golden scenarios seed001): a window that already fired fires again for
-- each late element that arrives within the lateness, with the event-time trigger re-emitting
-- the whole window, or -- with a purging trigger -- only what came since the last fire.
--
--   nc -lk 8888                                 then type lines such as  a,1718157600000
--   weir run examples/allowed-lateness/job.lua              event-time trigger
--   weir run examples/allowed-lateness/job.lua -- purging   purging(event_time)
--   weir sweep examples/allowed-lateness/job.lua --replay examples/allowed-lateness/input.replay \
--     --param allowed_lateness=0,1s,3s                     what each lateness costs
local weir = require("weir")

local purging = weir.args[1] == "purging"
local env = weir.env{ parallelism = 2 }

local trigger = weir.triggers.event_time()
if purging then
  trigger = weir.triggers.purging(trigger)
end

env:socket_text_stream("localhost", 8888)
  :map(function(line)
    local key, ts = line:match("^(%w+),(%d+)$")
    return { key, tonumber(ts) }
  end)
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

env:execute()
