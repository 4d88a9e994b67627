-- Idleness across parallel inputs (Flink's withIdleness), the job of golden scenario seed000.
--
--   nc -lk 10086                               then type lines such as  a 1   (key, seconds)
--   weir run examples/idleness/job.lua
--   weir run examples/idleness/job.lua --replay examples/idleness/input.replay
--
-- Lines go round-robin to two parallel watermark generators. A window fires only when BOTH
-- generators' watermarks pass its end -- unless one has been quiet for 10 s: then it is
-- marked idle and no longer holds the minimum back. A generator that comes back rejoins once
-- its watermark catches up.
local weir = require("weir")

local env = weir.env{ parallelism = 2 }
local even = weir.output_tag("even")

local windows = env:socket_text_stream("localhost", 10086)
  :map(function(line)
    local key, value = line:match("^(%S+)%s+(%d+)$")
    return { key, tonumber(value) }
  end)
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
env:execute("idleness")
