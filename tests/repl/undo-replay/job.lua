-- :undo on a paused replay (:step, :advance, :run): going back puts the replay, the virtual
-- clock, the generator and the rich function where they were; the same steps again print the
-- same lines, and :run to the end prints what `weir run --replay` prints.
local weir = require("weir")
local env = weir.env()
env:replay("in.replay")
  :map(function(line)
    local k, ts = line:match("^(%w+),(%d+)$")
    return { k, tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness("1s")
    :with_timestamp_assigner(function(e) return e[2] end))
  :process({
    n = 0,
    process = function(self, e, ctx, out)
      self.n = self.n + 1
      out(("%s #%d at %d, watermark %s, now %d"):format(e[1], self.n, ctx:timestamp(),
        tostring(ctx:current_watermark()), ctx:current_processing_time()))
    end,
    snapshot_state = function(self) return self.n end,
    restore_state = function(self, values) self.n = values[1] end,
  })
  :print()
env:execute()
