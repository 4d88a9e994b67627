-- A Kafka message that is no CSV row fails the job without on_error, naming the topic,
-- partition and offset and the value; a tombstone (no value) is an error too.
local weir = require("weir")
local kafka = require("kafka_mock")
local bs = kafka.start("--topic rows:1")
kafka.produce("rows", 0, 'a,1\nb,"2\nc,3\n')
local env = weir.env()
env:kafka_source{ bootstrap_servers = bs, topics = "rows", format = "csv",
  stopping_offsets = "latest" }
  :map(function(r) return "out " .. r[1] end):print()
kafka.around(function() env:execute() end)
