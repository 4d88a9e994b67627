-- The REPL steps back (:undo, :checkpoint, :restore, :savepoint) on a job without windows:
-- the manual source, a bounded-out-of-orderness generator with idleness, a rich function with
-- snapshot_state/restore_state (a running count per subtask), a side output, a collect sink
-- and print. Every state a checkpoint keeps today is here; going back and doing the same
-- again must print the same.
local weir = require("weir")
local env = weir.env()
local odd = weir.output_tag("odd")
local parsed = env:manual()
  :map(function(line)
    local k, ts = line:match("^(%w+),(%d+)$")
    return { k, tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness("1s")
    :with_timestamp_assigner(function(e) return e[2] end)
    :with_idleness("5s"))
local counted = parsed:process({
  n = 0,
  process = function(self, e, ctx, out)
    self.n = self.n + 1
    if self.n % 2 == 1 then
      ctx:output(odd, e[1] .. "#" .. self.n)
    end
    out(("%s #%d at %d, watermark %s"):format(e[1], self.n, ctx:timestamp(),
      tostring(ctx:current_watermark())))
  end,
  snapshot_state = function(self) return self.n end,
  restore_state = function(self, values) self.n = values[1] end,
})
counted:print()
out = counted:get_side_output(odd):collect() -- luacheck: ignore 111 (a global the session reads)
env:execute("repl undo")
