-- Orders and payments of a shop, matched by an interval join: a payment belongs to an order of
-- the same id when it comes at most 1 s before the order (clock skew between the two systems)
-- and at most 10 s after it. Lines are "order ID USER AMOUNT T" and "payment ID AMOUNT T",
-- T in seconds of event time. Each input has its own watermark (1 s out of orderness); the
-- join's is the smaller of the two. A payment that arrives behind the join's watermark is
-- late: it goes to a side output, printed too.
--
--   weir run job.lua --replay input.replay       (the socket is replaced by the replay)
--   nc -lk 9999, then weir run job.lua            (type lines into nc)
local weir = require("weir")

local env = weir.env()
local lines = env:socket_text_stream("localhost", 9999)

local function event_time()
  return weir.watermarks.bounded_out_of_orderness("1s")
    :with_timestamp_assigner(function(e) return e.ts end)
end

local orders = lines
  :filter(function(line) return line:match("^order ") ~= nil end)
  :map(function(line)
    local id, user, amount, t = line:match("^order (%S+) (%S+) (%d+) (%d+)$")
    return { id = id, user = user, amount = tonumber(amount), ts = tonumber(t) * 1000 }
  end)
  :assign_timestamps_and_watermarks(event_time())

local payments = lines
  :filter(function(line) return line:match("^payment ") ~= nil end)
  :map(function(line)
    local id, amount, t = line:match("^payment (%S+) (%d+) (%d+)$")
    return { id = id, amount = tonumber(amount), ts = tonumber(t) * 1000 }
  end)
  :assign_timestamps_and_watermarks(event_time())

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

env:execute()
