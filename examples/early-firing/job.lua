-- A custom trigger: fire early every 3 purchases of a user, and once more when the watermark
-- passes the end of the minute -- without purging, so each fire shows the running total.
--
--   nc -lk 9999       then type  user,amount,timestamp_ms   e.g.  alice,5,1000
--   weir run examples/early-firing/job.lua
local weir = require("weir")

local function early_every(n)
  return weir.trigger{
    name = "early_every",
    on_element = function(_, _, _, window, ctx)
      ctx:register_event_time_timer(window:max_timestamp())  -- the on-time fire
      local count = ctx:state("count")                          -- per user and window
      local c = (count:get() or 0) + 1
      if c >= n then
        count:clear()
        return weir.FIRE                                        -- early, keep the contents
      end
      count:set(c)
      return weir.CONTINUE
    end,
    on_event_time = function(_, time, window)
      return time == window:max_timestamp() and weir.FIRE or weir.CONTINUE
    end,
    clear = function(_, window, ctx)                            -- clean up what we set
      ctx:delete_event_time_timer(window:max_timestamp())
      ctx:state("count"):clear()
    end,
  }
end

local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }

local purchases = env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local user, amount, ts = line:match("^(%w+),(%d+),(%d+)$")
    if not user then
      error("expected user,amount,timestamp_ms (e.g. alice,5,1000)")
    end
    return { user, tonumber(amount), tonumber(ts) }
  end)

purchases
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness(0)
      :with_timestamp_assigner(function(p) return p[3] end))
  :key_by(function(p) return p[1] end)
  :window(weir.windows.tumbling_event_time("1m"))
  :trigger(early_every(3))
  :aggregate({
    create = function() return 0 end,
    add = function(p, total) return total + p[2] end,
    result = function(total) return total end,
  }, function(user, ctx, totals, out)
    local w = ctx:window()
    local final = ctx:current_watermark() >= w:max_timestamp()
    out({ user, tostring(w), totals[1], final and "final" or "early" })
  end)
  :print()

-- A line that does not parse goes to this side output with its error (on_error), so one typo
-- in nc does not end the job.
purchases:get_side_output(errors)
  :map(function(e) return ("skipped %q: %s"):format(e.value, e.error) end)
  :print_to_err()

env:execute("early firing")
