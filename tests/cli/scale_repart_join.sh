#!/usr/bin/env bash
# A repartitioning job across a cooperative hand-off (issue 19 items 3, 4 and 6) on the mock
# cluster: the input is NOT partitioned by key (record i in partition i % 8), key_by
# re-partitions through j-repartition-window-1 (8 partitions) into a windowed count. Process a
# runs alone (owning the 8 input and the 8 repartition partitions) on the first half of the
# input; b joins; the cooperative rebalance revokes some of a's partitions (input and
# repartition ones), which a snapshots (offsets; window state and valve channels of a
# repartition partition) and hands off; b is assigned them at the snapshot offsets. Then the
# rest of the input comes; both run to the stopping offsets. The union of their results
# equals one process's run, with no duplicate (a cooperative move repeats nothing). No sleeps:
# the waits read the processes' stderr (FIFOs) and wait for their exit. Session timeout 10 s
# (as scale_join.sh, for the same reason).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

start_mock --topic w:8 --topic ref:8 --topic j-state:8 --topic j-repartition-window-1:8
cat > gen.lua <<'LUA'
-- "partition key,timestamp": key k<i % 16> at i * 10 ms, in partition i % 8 (not by key),
-- then a marker per partition far ahead in event time (every real window fires before it)
for i = 1, 4000 do
  print((i % 8) .. " k" .. (i % 16) .. "," .. (i * 10))
end
for p = 0, 7 do
  print(p .. " end" .. p .. ",1000000000")
end
LUA
run_weir run gen.lua
expect_rc 0 "the input"
mv out input
stops=""
for p in 0 1 2 3 4 5 6 7; do
  grep "^$p " input | cut -d' ' -f2 > part$p
  stops="$stops$p:$(wc -l < part$p),"
done
cat > win.lua <<'LUA'
local weir = require("weir")
local stop = {}
for p, n in weir.args[3]:gmatch("(%d+):(%d+)") do stop[tonumber(p)] = tonumber(n) end
local env = weir.env{ batch_size = 16, max_parallelism = 8, auto_watermark_interval = 20 }
env:kafka_source{ bootstrap_servers = weir.args[1], topics = weir.args[4], format = "csv",
  stopping_offsets = stop,
  properties = { ["session.timeout.ms"] = 10000, ["heartbeat.interval.ms"] = 1000,
                 ["max.partition.fetch.bytes"] = 256 },
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(r)
    return tonumber(r[2]) end) }
  :key_by(function(r) return r[1] end)
  :window(weir.windows.tumbling_event_time("1s"))
  :aggregate({ create = function() return 0 end, add = function(_, n) return n + 1 end,
    result = function(n) return n end },
    function(key, ctx, counts, out)
      out(("%s %d %d"):format(key, ctx:window().start, counts[1])) end)
  :write_text(weir.args[2])
env:execute()
LUA

# the reference: one process over the whole input (topic ref)
for p in 0 1 2 3 4 5 6 7; do kc -P -t ref -p $p < part$p; done
run_weir run win.lua -- "$BS" single.txt "$stops" ref
expect_rc 0 "one process"
grep -v '^end' single.txt | sort > expected
[ "$(wc -l < expected)" -gt 600 ] && ok || bad "the single run's results: $(wc -l < expected)"

# the first half of every partition of w; a alone owns all 8
for p in 0 1 2 3 4 5 6 7; do head -n $(($(wc -l < part$p) / 2)) part$p | kc -P -t w -p $p; done
mkfifo ea eb
timeout 120 "$WEIR" run win.lua --group j --checkpoint-interval 0 -- "$BS" a.txt "$stops" w \
  2> ea &
A=$!
exec 5< ea
got=""
while read -r -t 60 line <&5; do
  echo "$line" >> a.err
  case $line in *"group j: assigned"*) got=$line; break ;; esac
done
[ "$(echo "$got" | grep -oE '[a-z0-9-]+/[0-9]+@' | wc -l)" = 16 ] && ok || bad "a alone owns 16: $got"
# b joins: a revokes 4 (hand-off), b is assigned them
timeout 120 "$WEIR" run win.lua --group j --checkpoint-interval 0 -- "$BS" b.txt "$stops" w \
  2> eb &
B=$!
exec 6< eb
revoked=""
while read -r -t 60 line <&5; do
  echo "$line" >> a.err
  case $line in *"group j: revoked"*) revoked=$line; break ;; esac
done
cat <&5 >> a.err &
CA=$!
assigned=""
while read -r -t 60 line <&6; do
  echo "$line" >> b.err
  case $line in *"group j: assigned"*) assigned=$line; break ;; esac
done
cat <&6 >> b.err &
CB=$!
rp=$(echo "$revoked" | grep -oE '[a-z0-9-]+/[0-9]+@' | sort)
bp=$(echo "$assigned" | grep -oE '[a-z0-9-]+/[0-9]+@' | sort)
[ "$(echo "$rp" | wc -l)" -ge 4 ] && [ "$rp" = "$bp" ] && ok \
  || bad "a revoked some and b was assigned those: $revoked / $assigned"
echo "$rp" | grep -q '^j-repartition-window-1/' && ok \
  || bad "repartition partitions moved: $revoked"
# b starts them where a stopped (a's snapshot offsets)
ra=$(echo "$revoked" | grep -oE '[a-z0-9-]+/[0-9]+@[0-9]+' | sort)
ba=$(echo "$assigned" | grep -oE '[a-z0-9-]+/[0-9]+@[0-9]+' | sort)
[ "$ra" = "$ba" ] && ok || bad "b starts at a's offsets: $ra / $ba"
# the rest of the input; both run to the stopping offsets
for p in 0 1 2 3 4 5 6 7; do tail -n +$(($(wc -l < part$p) / 2 + 1)) part$p | kc -P -t w -p $p; done
wait $A; rca=$?
wait $B; rcb=$?
wait $CA $CB
exec 5<&- 6<&-
[ "$rca$rcb" = 00 ] && ok || bad "both end: exit $rca $rcb ($(cat a.err b.err))"
cat a.txt b.txt | grep -v '^end' | sort > union
cmp -s union expected && ok || bad "the union equals the single run, each result once: $(diff union expected | head -5)"
grep -v '^end' b.txt > b.res
[ -s b.res ] && ok || bad "b produced results of the moved partitions"

stop_mock
finish
