-- An evictor: the average of each sensor's last 3 readings, on every reading. A global window
-- per sensor fires on each element (count trigger 1); the count evictor keeps only the last 3
-- elements, for good, so the window never grows.
--
--   nc -lk 9999       then type  sensor,value   e.g.  s1,10
--   weir run examples/keep-last/job.lua
local weir = require("weir")

local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }

local parsed = env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local sensor, value = line:match("^(%w+),(%-?[%d.]+)$")
    if not sensor or not tonumber(value) then
      error("expected sensor,value (e.g. s1,10)")
    end
    return { sensor, tonumber(value) }
  end)

parsed
  :key_by(function(r) return r[1] end)
  :window(weir.windows.global())
  :trigger(weir.triggers.count(1))
  :evictor(weir.evictors.count(3))             -- runs before the window function
  :process(function(sensor, _, readings, out)
    local sum = 0
    for _, r in ipairs(readings) do sum = sum + r[2] end
    out({ sensor, sum / #readings })
  end)
  :print()

-- A line that does not parse goes to this side output with its error (on_error), so one typo
-- in nc does not end the job.
parsed:get_side_output(errors)
  :map(function(e) return ("skipped %q: %s"):format(e.value, e.error) end)
  :print_to_err()

env:execute("moving average")
