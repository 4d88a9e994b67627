#!/usr/bin/env bash
# Scale-out state (issue 19 items 2 and 6) on the mock cluster: a windowed count per key over 8
# partitions, the input partitioned by weir.key_group(key, 8) and max_parallelism 8 (a key
# group is a partition), run by two processes of group g whose per-partition snapshots go to
# the state topic g-state. (1) Both run to the end of the input: the union of their results
# equals one process's run. (2) Both run unbounded with a snapshot after every batch; one is
# killed with kill -9 after some output; the other is assigned its partitions after the
# session timeout, restores their last snapshots (state, offsets, watermarks) and continues:
# every window result of the single run is in the union, values identical, and a result
# appears twice only if the killed process wrote it after its last snapshot (at most one
# checkpoint interval of results: one batch here). (3) State in a key group the process does
# not own (input not partitioned by key) fails the job, naming it. No sleeps: each wait reads
# the jobs' stdout (FIFOs) or waits for a process.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

start_mock --topic w:8 --topic g-state:8 --topic h-state:8 --topic bad:8 --topic bad-state:8
cat > gen.lua <<'LUA'
local weir = require("weir")
-- "partition key,timestamp": key k<i % 16> at i * 10 ms, in partition weir.key_group(key, 8)
for i = 1, 4000 do
  local k = "k" .. (i % 16)
  print(weir.key_group(k, 8) .. " " .. k .. "," .. (i * 10))
end
-- one marker per partition far ahead in event time: every real window fires before it
for p = 0, 7 do
  for j = 0, 10000 do
    if weir.key_group("end" .. j, 8) == p then
      print(p .. " end" .. j .. ",1000000000")
      break
    end
  end
end
LUA
run_weir run gen.lua
expect_rc 0 "the input"
for p in 0 1 2 3 4 5 6 7; do grep "^$p " out | cut -d' ' -f2 | kc -P -t w -p $p; done
cat > win.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 16, max_parallelism = 8, auto_watermark_interval = 20 }
local s = env:kafka_source{ bootstrap_servers = weir.args[1], topics = weir.args[4] or "w",
  format = "csv", stopping_offsets = weir.args[3] == "bounded" and "latest" or nil,
  properties = { ["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 500,
                 ["max.partition.fetch.bytes"] = 256 },
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(r)
    return tonumber(r[2]) end) }
  :key_by(function(r) return r[1] end, { partitioned = true })
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
[ "$(wc -l < expected)" -gt 600 ] && ok || bad "the single run's results: $(wc -l < expected)"

# (1) two processes to the end of the input
timeout 120 "$WEIR" run win.lua --group g -- "$BS" a1.txt bounded > /dev/null 2> a1.err &
A=$!
timeout 120 "$WEIR" run win.lua --group g -- "$BS" b1.txt bounded > /dev/null 2> b1.err &
B=$!
wait $A; rca=$?
wait $B; rcb=$?
[ "$rca$rcb" = 00 ] && ok || bad "two members: exit $rca $rcb ($(cat a1.err b1.err))"
grep -q "group g: assigned" a1.err && grep -q "group g: assigned" b1.err && ok \
  || bad "both were assigned partitions: $(cat a1.err b1.err)"
cat a1.txt b1.txt | grep -v '^end' | sort > union1
cmp -s union1 expected && ok || bad "(1) the union equals the single run: $(diff union1 expected | head -5)"

# (2) kill -9 one of two; the other continues from the last snapshots (group h, state h-state)
mkfifo fa fb
"$WEIR" run win.lua --group h --checkpoint-interval 0 -- "$BS" a2.txt > fa 2> a2.err &
A=$!
"$WEIR" run win.lua --group h --checkpoint-interval 0 -- "$BS" b2.txt > fb 2> b2.err &
B=$!
exec 5< fa 6< fb
n=0
while [ "$n" -lt 30 ] && read -r -t 60 line <&5; do n=$((n + 1)); done
kill -KILL $A
{ wait $A; } 2>/dev/null
exec 5<&-
[ "$n" = 30 ] && ok || bad "30 lines before the kill: $n ($(cat a2.err))"
declare -A missing
while read -r l; do missing["$l"]=1; done < expected
while read -r l; do unset "missing[$l]"; done < <(grep -v '^end' a2.txt)
# b's results as they come (its stdout), until every result is in a's file or b's output
while [ "${#missing[@]}" -gt 0 ] && read -r -t 60 k st c rest <&6; do
  unset "missing[$k $st $c]"
done
[ "${#missing[@]}" = 0 ] && ok || bad "(2) every result after the kill: ${#missing[@]} missing ($(tail -3 b2.err))"
kill -TERM $B
cat <&6 > /dev/null
wait $B; rcb=$?
exec 6<&-
[ "$rcb" = 0 ] && ok || bad "the survivor stops with 0: $rcb"
grep -q "group h: assigned .*@[1-9]" b2.err && ok \
  || bad "the survivor took the killed one's partitions at their snapshot offsets: $(cat b2.err)"
cat a2.txt b2.txt | grep -v '^end' | sort > union2
sort -u union2 | cmp -s - expected && ok || bad "(2) the union's results equal the single run's: $(sort -u union2 | diff - expected | head -5)"
# duplicates: only results the killed one wrote (after its last snapshot), at most one batch's
uniq -d union2 > dups
ndup=$(wc -l < dups)
while read -r l; do grep -qxF "$l" a2.txt || bad "duplicate $l not from the killed process"; done < dups
[ "$ndup" -le 16 ] && ok || bad "(2) duplicates within one interval's results (16): $ndup"
[ "$(grep -v '^end' b2.txt | sort | uniq -d | wc -l)" = 0 ] && ok || bad "the survivor repeats nothing itself"

# (3) input not partitioned by key: a process holds state of a key group it does not own
for i in $(seq 1 200); do echo "k$((i % 16)),$((i * 10))"; done | kc -P -t bad -p 0
for p in 1 2 3 4 5 6 7; do echo "end$p,1000000000" | kc -P -t bad -p $p; done
timeout 120 "$WEIR" run win.lua --group bad --checkpoint-interval 0 -- "$BS" a3.txt bounded bad \
  > /dev/null 2> a3.err &
A=$!
timeout 120 "$WEIR" run win.lua --group bad --checkpoint-interval 0 -- "$BS" b3.txt bounded bad \
  > /dev/null 2> b3.err &
B=$!
wait $A; rca=$?
wait $B; rcb=$?
[ "$rca" = 1 ] || [ "$rcb" = 1 ] && ok || bad "(3) a member fails: exit $rca $rcb"
cat a3.err b3.err > err
expect_err_has "the input is not partitioned by" "(3) the stray key group (the key_by's claim) is named"

# the rule's precondition: max_parallelism must be the partition count
sed 's/max_parallelism = 8/max_parallelism = 16/' win.lua > win16.lua
run_weir run win16.lua --group g -- "$BS" x.txt bounded
expect_rc 2 "max_parallelism not the partition count"
expect_err_has "so it must be the partition count 8" "max_parallelism not the partition count"

stop_mock
finish
