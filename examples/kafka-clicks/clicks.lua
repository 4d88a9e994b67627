-- Per-user click counts per minute from Kafka, with per-partition watermarks (as Flink's
-- KafkaSource with a WatermarkStrategy): each partition has its own bounded-out-of-orderness
-- generator, the source's watermark is the minimum over the partitions, so clicks of one
-- user (one key, one partition) are never late because another partition ran ahead.
-- README.md in this folder starts a mock cluster and produces the clicks with kcat.
--   weir run examples/kafka-clicks/clicks.lua -- BOOTSTRAP_SERVERS
local weir = require("weir")

local click = weir.record_type("kclick", { "string[32] user", "double ts", "string[64] page" })
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }

local clicks = env:kafka_source{
  bootstrap_servers = assert(weir.args[1], "usage: clicks.lua -- BOOTSTRAP_SERVERS"),
  topics = "clicks", format = "json", record = click,
  stopping_offsets = weir.param("follow", "no") == "yes" and nil or "latest",
  watermarks = weir.watermarks.bounded_out_of_orderness("5s")
    :with_timestamp_assigner(function(c) return c.ts end)
    :with_idleness("10s"),
}

clicks
  :key_by(function(c) return c.user end)
  :window(weir.windows.tumbling_event_time("1m"))
  :aggregate({
    create = function() return 0 end,
    add = function(_, n) return n + 1 end,
    result = function(n) return n end,
  }, function(user, ctx, counts, out)
    local w = ctx:window()
    out({ user = user, minute = os.date("!%Y-%m-%dT%H:%M", math.floor(w.start / 1000)),
      clicks = counts[1] })
  end)
  :print{ format = "json" }

clicks:get_side_output(errors)
  :map(function(e) return e.error end)
  :print("bad")

env:execute("kafka clicks")
