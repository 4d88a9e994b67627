-- Orders and payments of a shop, matched by an interval join: a payment belongs to an order of
-- the same id when it comes at most 1 s before the order (clock skew between the two systems)
-- and at most 10 s after it. Lines are "order ID USER AMOUNT T" and "payment ID AMOUNT T",
-- T in seconds of event time. Each input has its own watermark (1 s out of orderness); the
-- join's is the smaller of the two. A payment that arrives behind the join's watermark is
-- late: it goes to a side output, printed too. A line that does not parse goes, with its
-- error, to an error side output printed on stderr, and the job goes on.
--
--   weir run job.lua --replay input.replay       (the socket is replaced by the replay)
--   nc -lk 9999, then weir run job.lua            (type lines into nc)
local weir = require("weir")

local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }

-- one parse for both kinds; a line that is neither goes to the error side output (on_error)
local events = env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local id, user, amount, t = line:match("^order (%S+) (%S+) (%d+) (%d+)$")
    if id then
      return { kind = "order", id = id, user = user, amount = tonumber(amount),
               ts = tonumber(t) * 1000 }
    end
    id, amount, t = line:match("^payment (%S+) (%d+) (%d+)$")
    if id then
      return { kind = "payment", id = id, amount = tonumber(amount), ts = tonumber(t) * 1000 }
    end
    error("expected order ID USER AMOUNT T or payment ID AMOUNT T")
  end)

local function of_kind(kind)
  return events
    :filter(function(e) return e.kind == kind end)
    :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness("1s")
      :with_timestamp_assigner(function(e) return e.ts end))
end
local orders, payments = of_kind("order"), of_kind("payment")

local late = weir.output_tag("late payments")
local paid = orders:key_by(function(o) return o.id end)
  :interval_join(payments:key_by(function(p) return p.id end))
  :between("-1s", "10s")
  :side_output_right_late_data(late)
  :process(function(o, p, ctx, out)
    out(("%s: %s paid %d of %d, %+ds from the order (at %ds)"):format(o.id, o.user, p.amount,
      o.amount, (p.ts - o.ts) / 1000, ctx:timestamp() / 1000))
  end)

paid:print()
paid:get_side_output(late)
  :map(function(p) return ("late payment %s of %d at %ds"):format(p.id, p.amount, p.ts / 1000) end)
  :print()

events:get_side_output(errors)
  :map(function(e) return ("skipped %q: %s"):format(e.value, e.error) end)
  :print_to_err()

env:execute()
