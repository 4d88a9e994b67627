-- Kafka messages that are no JSON record, errors routed: each names the topic, partition and
-- offset of the message and what was wrong; the good ones go on (mock cluster, bounded read).
local weir = require("weir")
local kafka = require("kafka_mock")
local click = weir.record_type("kclick", { "string[8] user", "int32_t n" })
local bs = kafka.start("--topic bad:2")
kafka.produce("bad", 0, '{"user":"ann","n":1}\n{"user":"ann","n":1.5}\n{"user":"bob","n":2}\n')
kafka.produce("bad", 1, '[1]\n{"user":"cy","n":3}\n{"n":4}\n')
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local s = env:kafka_source{ bootstrap_servers = bs, topics = "bad", format = "json",
  record = click, stopping_offsets = "latest" }
s:map(function(r) return ("out %s %d"):format(r.user, r.n) end):print()
s:get_side_output(errors):map(function(e) return "err " .. e.error end):print()
kafka.around(function() env:execute() end)
