-- Benchmark job: env:kafka_source (typed "key,ts" messages, parsed in C by weir_fields_parse
-- in the Kafka driver, bounded by stopping_offsets = "latest", event time per partition with
-- a monotonous generator each) -> key_by -> tumbling 5 s event-time windows -> aggregate
-- (count) -> checksum sink, parallelism 1: bench/text.lua's "c" job with its file replaced by
-- a topic of the mock cluster holding the same lines, spread over its partitions by key (each
-- partition's timestamps never go back). bench/baseline/kafka.c consumes the same topic with
-- plain librdkafka, the same properties, per-partition watermarks, and aggregates as
-- bench/baseline/windows.c does; bench/run checks both print the same line.
--
--   weir run bench/kafka.lua -- BOOTSTRAP_SERVERS TOPIC [NAME=VALUE]...   (consumer properties)
local weir = require("weir")
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local WINDOW_MS = 5000
local bootstrap, topic = weir.args[1], weir.args[2]
if not (bootstrap and topic) then
  error("bench/kafka.lua: expected BOOTSTRAP_SERVERS TOPIC [NAME=VALUE]...")
end
local props = {}
for i = 3, #weir.args do
  local k, v = weir.args[i]:match("^([^=]+)=(.*)$")
  props[assert(k, "bench/kafka.lua: a property is NAME=VALUE")] = v
end

local function digest_term(r)
  return (r.key + 1) * (r.start / WINDOW_MS + 1) * r.count
end

local env = weir.env{ parallelism = 1, auto_watermark_interval = common.WATERMARK_INTERVAL }
local ev = weir.record_type("ev", { "int32_t key", "double ts" })
env:kafka_source{ bootstrap_servers = bootstrap, topics = topic, record = ev,
  stopping_offsets = "latest", properties = props,
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(e) return e.ts end) }
  :key_by(function(e) return e.key end)
  :window(weir.windows.tumbling_event_time("5s"))
  :aggregate(common.count(), function(key, ctx, counts, out)
    out({ key = key, start = ctx:window().start, count = counts[1] })
  end)
  :sink(common.checksum_sink(digest_term))

env:execute("bench kafka")
