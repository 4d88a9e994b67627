#!/usr/bin/env bash
# Scale-out membership (issue 19 item 1) on the mock cluster: `weir run --group NAME` makes the
# Kafka source a member of consumer group NAME (cooperative-sticky): two processes started
# together split 8 partitions, each reads only what it owns, and the union of their outputs
# equals one process's run (every record once). The option errors. No sleeps: the processes
# run to the end of their bounded input (stopping_offsets = "latest").
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

start_mock --topic t:8 --topic g-state:8 --topic r-state:8
for p in 0 1 2 3 4 5 6 7; do
  for i in $(seq 1 150); do echo "p$p-$i"; done | kc -P -t t -p $p
done
cat > map.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 16 }
env:kafka_source{ bootstrap_servers = weir.args[1], topics = "t", stopping_offsets = "latest",
  properties = { ["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 500,
                 ["max.partition.fetch.bytes"] = 512 } }
  :map(function(l) return "got " .. l end)
  :write_text(weir.args[2])
env:execute()
LUA

run_weir run map.lua -- "$BS" single.txt
expect_rc 0 "one process"
[ "$(wc -l < single.txt)" = 1200 ] && ok || bad "one process reads 1200: $(wc -l < single.txt)"

timeout 120 "$WEIR" run map.lua --group g -- "$BS" a.txt 2> a.err &
A=$!
timeout 120 "$WEIR" run map.lua --group g --instance-id b-1 -- "$BS" b.txt 2> b.err &
B=$!
wait $A; rca=$?
wait $B; rcb=$?
[ "$rca$rcb" = 00 ] && ok || bad "two members: exit $rca $rcb ($(cat a.err b.err))"
# both were assigned partitions (the first join usually gathers both, 4 each; a process that
# starts late under load gets its share through a cooperative move instead), and whatever
# moved, every record was read once: the union equals one process's run, duplicates included
grep -q 'group g: assigned t/' a.err && grep -q 'group g: assigned t/' b.err && ok \
  || bad "both members were assigned partitions: $(cat a.err b.err)"
sort single.txt > single.sorted
cat a.txt b.txt | sort > union.sorted
cmp -s single.sorted union.sorted && ok || bad "the union equals one process's run: $(diff single.sorted union.sorted | head -5)"

# operator state that is not keyed (snapshot_state) follows no partition: said at the join
cat > rich.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 16 }
env:kafka_source{ bootstrap_servers = weir.args[1], topics = "t", stopping_offsets = "latest",
  properties = { ["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 500 } }
  :map{ map = function(self, l) self.n = (self.n or 0) + 1; return l end,
        snapshot_state = function(self) return self.n end,
        restore_state = function(self, v) end }
  :write_text(weir.args[2])
env:execute()
LUA
run_weir run rich.lua --group r -- "$BS" r.txt
expect_rc 0 "a rich function with snapshot_state in a group"
expect_err_has "--group r: map (rich.lua:5) has snapshot_state (operator state, not keyed): it is in no partition's snapshot" "snapshot_state in a group is said"
[ "$(wc -l < r.txt)" = 1200 ] && ok || bad "the rich job alone reads 1200: $(wc -l < r.txt)"

# errors
run_weir run map.lua --instance-id x -- "$BS" e.txt
expect_rc 2 "--instance-id alone"
expect_err_has "--instance-id needs --group" "--instance-id alone"
run_weir run map.lua --group
expect_rc 2 "--group without a name"
expect_err_has "--group needs a NAME" "--group without a name"
run_weir run map.lua --group g --checkpoint-dir ck -- "$BS" e.txt
expect_rc 2 "--group with --checkpoint-dir"
expect_err_has "--group g: --checkpoint-dir and --restore keep one process's state" "--group with --checkpoint-dir"
echo 'local weir = require("weir"); local env = weir.env{}; env:from_elements{1}:print(); env:execute()' > file.lua
run_weir run file.lua --group g
expect_rc 2 "--group without a Kafka source"
expect_err_has "the job must read exactly one source, a kafka_source" "--group without a Kafka source"
run_weir run --help
expect_out_has "--group NAME" "--help names --group"

stop_mock
finish
