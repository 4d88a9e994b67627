-- Lines "key,value" from a TCP socket, parsed, keyed and summed per key.
--
--   nc -lk 9999                          in one terminal, then type lines such as  a,5
--   weir run examples/socket-keyed/job.lua
--
-- Bad lines do not stop the job: on_error sends them, with the error, to a side output that
-- prints on stderr. Closing nc ends the input and the job.
local weir = require("weir")

local errors = weir.output_tag("errors")
local env = weir.env{ parallelism = 2, on_error = errors }

local parsed = env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local key, value = line:match("^%s*([%w_]+)%s*,%s*(-?%d+)%s*$")
    if not key then
      error("expected key,number")
    end
    return { key, tonumber(value) }
  end)

parsed
  :key_by(function(r) return r[1] end)
  :map({
    open = function(self) self.sums = {} end,
    map = function(self, r)
      local sum = (self.sums[r[1]] or 0) + r[2]
      self.sums[r[1]] = sum
      return { r[1], sum }
    end,
  })
  :print()

parsed:get_side_output(errors)
  :map(function(e) return ("skipped %q: %s"):format(e.value, e.error) end)
  :print_to_err()

env:execute("socket sums")
