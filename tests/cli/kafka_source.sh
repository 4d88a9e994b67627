#!/usr/bin/env bash
# env:kafka_source on the mock cluster: N keyed JSON records over 4 partitions (kcat) through a
# per-partition-watermarked tumbling window, bounded by stopping_offsets = "latest" (exact
# output); the Kafka timestamp as the record's; metadata; text and csv formats; explicit
# starting and stopping offsets.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

start_mock --topic clicks:4 --topic lines:2
for i in $(seq 1 40); do
  u=u$((i % 5))
  echo "$u:{\"user\":\"$u\",\"ts\":$((i * 1000))}"
done | kc -P -t clicks -K:
kc -C -t clicks -e -q -f '%p\n' | sort -u > parts
[ "$(wc -l < parts)" -ge 3 ] && ok || bad "the keys spread over partitions: $(cat parts)"

cat > window.lua <<'LUA'
local weir = require("weir")
local click = weir.record_type("click", { "string[16] user", "double ts" })
local env = weir.env()
env:kafka_source{ bootstrap_servers = weir.args[1], topics = "clicks", format = "json",
  record = click, stopping_offsets = "latest",
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(c) return c.ts end) }
  :key_by(function(c) return c.user end)
  :window(weir.windows.tumbling_event_time("10s"))
  :aggregate({
    create = function() return 0 end,
    add = function(_, n) return n + 1 end,
    result = function(n) return n end,
  }, function(user, ctx, counts, out)
    out(("%s %d %d"):format(user, ctx:window().start, counts[1]))
  end)
  :print()
env:execute()
LUA
run_weir run window.lua -- "$BS"
expect_rc 0 "a bounded Kafka job ends by itself"
sort out > sorted
[ "$(cat sorted)" = "u0 0 1
u0 10000 2
u0 20000 2
u0 30000 2
u0 40000 1
u1 0 2
u1 10000 2
u1 20000 2
u1 30000 2
u2 0 2
u2 10000 2
u2 20000 2
u2 30000 2
u3 0 2
u3 10000 2
u3 20000 2
u3 30000 2
u4 0 2
u4 10000 2
u4 20000 2
u4 30000 2" ] && ok || bad "per-user counts per 10 s window, none late: $(cat out) $(cat err)"
[ ! -s err ] && ok || bad "nothing on stderr: $(cat err)"

# the record's timestamp is the message's (kcat's CreateTime), and metadata shows the rest
cat > meta.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:kafka_source{ bootstrap_servers = weir.args[1], topics = { "clicks" }, metadata = true,
  stopping_offsets = "latest" }
  :process(function(m, ctx, out)
    out(("%s %d %d %s %d %s"):format(m.topic, m.partition, m.offset, m.key, ctx:timestamp(),
      tostring(ctx:timestamp() == m.timestamp)))
  end)
  :print()
env:execute()
LUA
run_weir run meta.lua -- "$BS"
expect_rc 0 "metadata job"
kc -C -t clicks -e -q -f 'clicks %p %o %k %T true\n' | sort > want
sort out > got
[ "$(cat got)" = "$(cat want)" ] && [ "$(wc -l < got)" = 40 ] && ok \
  || bad "topic, partition, offset, key and Kafka timestamp: $(diff got want | head)"

# text and csv; starting and stopping offsets per partition
printf 'a,1\nb,2\nc,3\nd,4\n' | kc -P -t lines -p 0
printf 'e,5\nf,6\n' | kc -P -t lines -p 1
cat > text.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
local fmt = weir.args[2]
local s = env:kafka_source{ bootstrap_servers = weir.args[1], topics = "lines",
  format = fmt, starting_offsets = { [0] = 1 }, stopping_offsets = { [0] = 3 } }
if fmt == "csv" then
  s = s:map(function(row) return row[1] .. "=" .. row[2] end)
end
s:print()
env:execute()
LUA
run_weir run text.lua -- "$BS" text
expect_rc 0 "text format"
[ "$(sort out)" = "b,2
c,3
e,5
f,6" ] && ok || bad "partition 0 from offset 1 to 3, partition 1 from earliest to latest: $(cat out)"
run_weir run text.lua -- "$BS" csv
expect_rc 0 "csv format"
[ "$(sort out)" = "b=2
c=3
e=5
f=6" ] && ok || bad "csv rows: $(cat out)"

stop_mock
[ "$mock_rc" = 0 ] && ok || bad "kafka-mock exits 0"
finish
