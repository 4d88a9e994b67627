#!/usr/bin/env bash
# A repartitioning job across a kill -9 (issue 19 items 3, 4 and 6) on the mock cluster: input
# NOT partitioned by key (record i in partition i % 4), key_by re-partitions through
# k-repartition-window-1, a keyed tumbling window behind it. Two processes of group k run
# unbounded with a snapshot after every batch (--checkpoint-interval 0); one is killed with
# kill -9 after some output; the other is assigned its partitions (input and repartition ones)
# after the session timeout, restores their snapshots (offsets, window state, the valves'
# channels, the records taken per upstream partition) and continues. Every window result of
# a single run is in the union with the same value (a record the survivor reads and sends
# again is known by its upstream partition and offset and dropped: no count is inflated), and
# a result appears twice only if the killed one wrote it. No sleeps: the waits read FIFOs.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

start_mock --topic in:4 --topic k-state:4 --topic k-repartition-window-1:4
cat > gen.lua <<'LUA'
local weir = require("weir")
for i = 1, 4000 do
  print((i % 4) .. " k" .. (i % 16) .. "," .. (i * 10))
end
-- markers far ahead, one key in each repartition partition r: their 1e9 windows fire after
-- every real one of r, once every input partition is past 2e9
local ends = {}
for j = 0, 1000 do
  local g = weir.key_group("end" .. j, 4)
  ends[g] = ends[g] or ("end" .. j)
end
for p = 0, 3 do
  for r = 0, 3 do
    print(p .. " " .. ends[r] .. ",1000000000")
  end
  print(p .. " " .. ends[0] .. ",2000000000")
end
LUA
run_weir run gen.lua
expect_rc 0 "the input"
for p in 0 1 2 3; do grep "^$p " out | cut -d' ' -f2 | kc -P -t in -p $p; done
cat > win.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 16, max_parallelism = 4, auto_watermark_interval = 20 }
local s = env:kafka_source{ bootstrap_servers = weir.args[1], topics = "in",
  format = "csv", stopping_offsets = weir.args[3] and "latest" or nil,
  properties = { ["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 500,
                 ["max.partition.fetch.bytes"] = 256 },
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(r)
    return tonumber(r[2]) end) }
  :key_by(function(r) return r[1] end)
  :window(weir.windows.tumbling_event_time("1s"))
  :aggregate({ create = function() return 0 end, add = function(_, n) return n + 1 end,
    result = function(n) return n end },
    function(key, ctx, counts, out)
      out(("%s %d %d"):format(key, ctx:window().start, counts[1])) end)
s:write_text(weir.args[2])
-- stdout (a FIFO the test reads) gets long lines: the job blocks on it until the test reads
local pad = string.rep(".", 4000)
s:map(function(l) return l .. " " .. pad end):print()
env:execute()
LUA

run_weir run win.lua -- "$BS" single.txt bounded
expect_rc 0 "one process"
grep -v '^end' single.txt | sort > expected
[ "$(grep -c '^end[0-9]* 1000000000 ' single.txt)" = 4 ] && ok || bad "4 marker windows"
[ "$(wc -l < expected)" -gt 600 ] && ok || bad "the single run's results: $(wc -l < expected)"

mkfifo fa fb
"$WEIR" run win.lua --group k --checkpoint-interval 0 -- "$BS" a.txt > fa 2> a.err &
A=$!
"$WEIR" run win.lua --group k --checkpoint-interval 0 -- "$BS" b.txt > fb 2> b.err &
B=$!
exec 5< fa 6< fb
n=0
while [ "$n" -lt 20 ] && read -r -t 60 line <&5; do n=$((n + 1)); done
kill -KILL $A
{ wait $A; } 2>/dev/null
exec 5<&-
[ "$n" = 20 ] && ok || bad "20 lines before the kill: $n ($(cat a.err))"
# b's results as they come, until the marker windows of all 4 repartition partitions (after
# every real one of each) have fired there: it owns them all then (a's were moved to it)
ends=0
while [ "$ends" -lt 4 ] && read -r -t 90 k st c rest <&6; do
  case $k in end*) [ "$st" = 1000000000 ] && ends=$((ends + 1)) ;; esac
done
[ "$ends" = 4 ] && ok || bad "the survivor fired the 4 marker windows ($(tail -3 b.err))"
kill -TERM $B
cat <&6 > /dev/null
wait $B; rcb=$?
exec 6<&-
[ "$rcb" = 0 ] && ok || bad "the survivor stops with 0: $rcb"
grep -q "group k: assigned .*k-repartition-window-1/[0-3]@[1-9]" b.err && ok \
  || bad "the survivor took repartition partitions at their snapshot offsets: $(cat b.err)"
cat a.txt b.txt | grep -v '^end' | sort > union
sort -u union | cmp -s - expected && ok || bad "the union's results equal the single run's: $(sort -u union | diff - expected | head -5)"
uniq -d union > dups
while read -r l; do grep -qxF "$l" a.txt || bad "duplicate $l not from the killed process"; done < dups
[ "$(grep -v '^end' b.txt | sort | uniq -d | wc -l)" = 0 ] && ok || bad "the survivor repeats nothing itself"

stop_mock
finish
