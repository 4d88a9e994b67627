#!/usr/bin/env bash
# Repartition topics (issue 19 items 3, 4 and 6) on the mock cluster: the input is NOT
# partitioned by key (record i in partition i % 4), a keyed tumbling window after key_by runs in
# --group mode, so the key_by re-partitions through g-repartition-window-1 (4 partitions, the
# job's max_parallelism) with watermarks as control records per upstream partition. (1) Two
# processes: the union of their window results equals a single-process run's (without
# --group) of the same input: every result present, values identical, none twice; no control
# record reaches user code (the key selector, the window's add and the map after it check
# what they get). (2) A lagging upstream
# partition holds the watermark: partition 3 stops early in event time; no window above its
# watermark fires until its records come (a third run writes them later). (3) A missing
# repartition topic is made; one with the wrong partition count is an error naming it. (4) What is not built (two
# repartitions in a job) is refused, naming it. No sleeps: the waits are for
# processes and for lines on FIFOs.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

start_mock --topic in:4 --topic g-state:4 --topic g-repartition-window-1:4 \
  --topic lag:4 --topic l-state:4 --topic l-repartition-window-1:4 --topic auto-state:4 \
  --topic wrong-state:4 --topic wrong-repartition-window-1:2 \
  --topic two-state:4 --topic two-repartition-window-1:4 --topic two-repartition-window-2:4
cat > gen.lua <<'LUA'
-- "partition key,timestamp": key k<i % 16> at i * 10 ms, in partition i % 4 (not by key)
for i = 1, 3000 do
  print((i % 4) .. " k" .. (i % 16) .. "," .. (i * 10))
end
LUA
run_weir run gen.lua
expect_rc 0 "the input"
for p in 0 1 2 3; do grep "^$p " out | cut -d' ' -f2 | kc -P -t in -p $p; done
cat > win.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 16, max_parallelism = 4, auto_watermark_interval = 20 }
local s = env:kafka_source{ bootstrap_servers = weir.args[1], topics = "in",
  format = "csv", stopping_offsets = "latest",
  properties = { ["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 500,
                 ["max.partition.fetch.bytes"] = 256 },
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(r)
    return tonumber(r[2]) end) }
  :map(function(r) return { r[1], tonumber(r[2]) } end)
  -- the key selector runs on both sides of the repartition: a control record ({ u, w, idle })
  -- would fail here, as would one in the window's add
  :key_by(function(r)
    assert(type(r[1]) == "string" and type(r[2]) == "number" and r[3] == nil, "not a record")
    return r[1] end)
  :window(weir.windows.tumbling_event_time("1s"))
  :aggregate({ create = function() return 0 end,
    add = function(r, n) assert(type(r[1]) == "string", "not a record") return n + 1 end,
    result = function(n) return n end },
    function(key, ctx, counts, out)
      out(("%s %d %d"):format(key, ctx:window().start, counts[1])) end)
  :map(function(l)
    assert(type(l) == "string" and l:match("^%w+ %d+ %d+$"), "not a window result")
    return l end)
s:write_text(weir.args[2])
env:execute()
LUA

run_weir run win.lua -- "$BS" single.txt
expect_rc 0 "one process, no --group"
sort single.txt > expected
[ "$(wc -l < expected)" -gt 400 ] && ok || bad "the single run's results: $(wc -l < expected)"

# (1) two processes of group g
timeout 120 "$WEIR" run win.lua --group g -- "$BS" a1.txt > /dev/null 2> a1.err &
A=$!
timeout 120 "$WEIR" run win.lua --group g -- "$BS" b1.txt > /dev/null 2> b1.err &
B=$!
wait $A; rca=$?
wait $B; rcb=$?
[ "$rca$rcb" = 00 ] && ok || bad "(1) two members: exit $rca $rcb ($(cat a1.err b1.err))"
grep -q "group g: assigned" a1.err && grep -q "group g: assigned" b1.err && ok \
  || bad "(1) both were assigned partitions: $(cat a1.err b1.err)"
cat a1.txt b1.txt | sort > union1
cmp -s union1 expected && ok || bad "(1) the union equals the single run: $(diff union1 expected | head -5)"

# (2) a lagging upstream partition holds the watermark behind the repartition: partition 3 of
# topic lag has its records only up to 8000 ms at first, the others up to 30000 ms. One process
# (it owns every partition; the records and control records still go through the topic) prints
# its results as they come: once a window at 5000 ms has fired, none at 8000 ms or later may
# have (partition 3's watermark is below 8999). Then the rest of partition 3 and two markers
# per partition far ahead (at 1e9 and 2e9 ms: the 1e9 windows fire after every real one); the
# results, read until the marker's, equal a single run's over the whole topic, values
# identical: a window that fired early would miss partition 3's records (leaving partition 3's
# channel out of the valve fails this comparison; windows fire in time order, so the check
# before the rest is written sees only what came before the 5000 ms one).
cat > gen2.lua <<'LUA'
for i = 1, 3000 do
  local p = i % 4
  local part = (p == 3 and i * 10 > 8000) and "late" or "first"
  print(part .. " " .. p .. " k" .. (i % 16) .. "," .. (i * 10))
end
LUA
run_weir run gen2.lua
expect_rc 0 "(2) the input"
mv out lagin
for p in 0 1 2 3; do grep "^first $p " lagin | cut -d' ' -f3 | kc -P -t lag -p $p; done
sed -e 's/topics = "in"/topics = weir.args[3] or "in"/' \
    -e 's/stopping_offsets = "latest"/stopping_offsets = weir.args[4] and "latest" or nil/' \
    win.lua > lag.lua
echo 's:print()' >> lag.lua
sed -i 's/^env:execute()$//; $a env:execute()' lag.lua
mkfifo fl
"$WEIR" run lag.lua --group l -- "$BS" l.txt lag > fl 2> l.err &
L=$!
exec 5< fl
early=0
seen5000=0
: > l.lines
while read -r -t 60 k st c <&5; do
  echo "$k $st $c" >> l.lines
  [ "$st" -ge 8000 ] && early=$((early + 1))
  if [ "$st" = 5000 ]; then seen5000=1; break; fi
done
[ "$seen5000" = 1 ] && ok || bad "(2) the window at 5000 fired ($(cat l.err))"
[ "$early" = 0 ] && ok || bad "(2) no window at 8000 or later before partition 3 passed it: $early"
grep "^late 3 " lagin | cut -d' ' -f3 | kc -P -t lag -p 3
for p in 0 1 2 3; do printf 'end,1000000000\nend,2000000000\n' | kc -P -t lag -p $p; done
while read -r -t 60 k st c <&5; do
  [ "$k" = end ] && break
  echo "$k $st $c" >> l.lines
done
kill -TERM $L
cat <&5 > /dev/null
wait $L; rcl=$?
exec 5<&-
[ "$rcl" = 0 ] && ok || bad "(2) stops with 0: $rcl ($(cat l.err))"
run_weir run lag.lua -- "$BS" lagref.txt lag bounded
expect_rc 0 "(2) the single run over the whole topic"
grep -v '^end' lagref.txt | sort > lagexpected
[ "$(wc -l < lagexpected)" -gt 400 ] && ok || bad "(2) the single run's results: $(wc -l < lagexpected)"
sort l.lines | cmp -s - lagexpected && ok || bad "(2) the results equal the single run's: $(sort l.lines | diff - lagexpected | head -5)"

# (3) a missing repartition topic is made (librdkafka's mock creates a topic a producer asks
# for, with its default of 4 partitions; a cluster with CreateTopics gets weir's request), and
# one of another partition count than max_parallelism is an error naming it
run_weir run win.lua --group auto -- "$BS" auto.txt
expect_rc 0 "(3) the repartition topic made"
sort auto.txt | cmp -s - expected && ok || bad "(3) the results with a made topic"
run_weir run win.lua --group wrong -- "$BS" x.txt
expect_rc 1 "(3) the repartition topic with 2 partitions"
expect_err_has "the repartition topic wrong-repartition-window-1 has 2 partitions; a key group behind it is one of them, so it must have the job's max_parallelism, 4" \
  "(3) its message"

# (4) what is not built is refused, naming it: two repartitioning key_by in one job
cat > two.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ max_parallelism = 4 }
local function count(s)
  return s:window(weir.windows.tumbling_event_time("1s"))
    :aggregate({ create = function() return 0 end, add = function(_, n) return n + 1 end,
      result = function(n) return n end })
end
local src = env:kafka_source{ bootstrap_servers = weir.args[1], topics = "in", format = "csv",
  stopping_offsets = "latest", watermarks = weir.watermarks.monotonous()
    :with_timestamp_assigner(function(r) return tonumber(r[2]) end) }
count(src:key_by(function(r) return r[1] end)):print()
count(src:key_by(function(r) return r[2] end)):print()
env:execute()
LUA
run_weir run two.lua --group two -- "$BS"
expect_rc 2 "(4) two repartitions"
expect_err_has "--group two: the job has 2 key_by that repartition (without partitioned = true); one is built" \
  "(4) two repartitions: the message"

stop_mock
finish
