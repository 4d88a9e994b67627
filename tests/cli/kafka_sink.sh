#!/usr/bin/env bash
# ds:kafka_sink on the mock cluster: records written with keys and an explicit partition and
# read back with kcat; with checkpoints every batch (each flushes and waits for the acks)
# everything arrives; a delivery that fails (the only broker down, message.timeout.ms short)
# fails the job loudly, naming the sink and the topic.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

start_mock --topic out:3 --topic parts:2 --topic ck:2 --topic lost:1
cat > sink.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 4 }
local rows = {}
for i = 1, 30 do rows[i] = { user = "u" .. (i % 4), n = i } end
local s = env:from_collection(rows)
local topic = weir.args[2]
if topic == "parts" then
  s:map(function(r) return r.user .. "," .. r.n end)
    :kafka_sink{ bootstrap_servers = weir.args[1], topic = topic,
      partition = function(line) return tonumber(line:match(",(%d+)$")) % 2 end }
else
  s:kafka_sink{ bootstrap_servers = weir.args[1], topic = topic, format = "json",
    key = function(r) return r.user end,
    properties = { ["message.timeout.ms"] = 300, ["linger.ms"] = 0 } }
end
env:execute()
LUA
run_weir run sink.lua -- "$BS" out
expect_rc 0 "a Kafka sink"
kc -C -t out -e -q -f '%k %s\n' | sort -t' ' -k2 > got
for i in $(seq 1 30); do echo "u$((i % 4)) {\"n\":$i,\"user\":\"u$((i % 4))\"}"; done | sort -t' ' -k2 > want
cmp -s got want && ok || bad "every record once, JSON with its key: $(diff got want | head -5)"
kc -C -t out -e -q -f '%k %p\n' | sort -u > keyparts
[ "$(cut -d' ' -f1 keyparts | sort | uniq -d)" = "" ] && ok || bad "one partition per key: $(cat keyparts)"

run_weir run sink.lua -- "$BS" parts
expect_rc 0 "a sink with a partition function"
kc -C -t parts -p 0 -e -q | cut -d, -f2 | sort -n | tr '\n' ' ' > p0
[ "$(cat p0)" = "2 4 6 8 10 12 14 16 18 20 22 24 26 28 30 " ] && ok || bad "even n in partition 0: $(cat p0)"

run_weir run sink.lua --checkpoint-dir ckdir --checkpoint-interval 0 -- "$BS" ck
expect_rc 0 "a checkpointed sink"
[ "$(kc -C -t ck -e -q | wc -l)" = 30 ] && ok || bad "30 records with a checkpoint per batch"
[ "$(ls ckdir | grep -c chk-)" -ge 1 ] && ok || bad "checkpoints were taken"

mock_cmd "down 1"
run_weir run sink.lua -- "$BS" lost
expect_rc 1 "a failed delivery fails the job"
expect_err_has "weir: kafka_sink lost (sink.lua:" "names the sink"
expect_err_has "topic lost" "names the topic"
mock_cmd "up 1"

stop_mock
finish
