-- Idleness across parallel inputs (Flink's withIdleness).
--
--   nc -lk 10086                               then type lines such as  a 1   (key, seconds)
--   weir run examples/idleness/job.lua
--   weir run examples/idleness/job.lua --replay examples/idleness/input.replay
--
-- Lines go round-robin to two parallel watermark generators. A window fires only when BOTH
-- generators' watermarks pass its end -- unless one has been quiet for 10 s: then it is
-- marked idle and no longer holds the minimum back. A generator that comes back rejoins once
-- its watermark catches up. Typing live, the pauses matter: input.replay waits 11 s (longer
-- than the 10 s idleness) before `a 20` and before `b 25`.
--
-- In input.replay, "b 1" comes after the watermark has passed 10 s (the end of its window
-- [0, 10000)): it is late and dropped, and weir names it when the job ends (`1 late record(s)
-- dropped ...; the first: (b,1) ...`).
local weir = require("weir")

local errors = weir.output_tag("errors")
local env = weir.env{ parallelism = 2, on_error = errors }
local even = weir.output_tag("even")

local lines = env:socket_text_stream("localhost", 10086)
  :map(function(line)
    local key, value = line:match("^(%S+)%s+(%d+)$")
    if not key then
      error("expected key seconds (e.g. a 1)")
    end
    return { key, tonumber(value) }
  end)

local windows = lines
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness("5s")      -- watermark = max seen - 5 s - 1 ms
      :with_timestamp_assigner(function(e) return e[2] * 1000 end)
      :with_idleness("10s"))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("10s"))
  :process({
    open = function(self) self.fired = 0 end,           -- per parallel subtask
    process = function(self, key, ctx, elements, out)
      for _, e in ipairs(elements) do
        out(e)
        if e[2] % 2 == 0 then ctx:output(even, { "side-" .. e[1], e[2] }) end
      end
      print(("window #%d %s key=%s watermark=%s"):format(
        self.fired, tostring(ctx:window()), key, tostring(ctx:current_watermark())))
      self.fired = self.fired + 1
    end,
  })

windows:print()
windows:get_side_output(even):print()

-- A line that does not parse goes to this side output with its error (on_error), so one typo
-- in nc does not end the job.
lines:get_side_output(errors)
  :map(function(e) return ("skipped %q: %s"):format(e.value, e.error) end)
  :print_to_err()

env:execute("idleness")
