#!/usr/bin/env bash
# Kafka offsets in checkpoints on the mock cluster: a keyed rolling sum, and a windowed count
# with per-partition watermarks, over 4 partitions into
# write_text, checkpointed every batch, killed with SIGKILL after some output and restored from
# its checkpoint: the file then equals an uninterrupted run's (nothing lost, nothing twice).
# The group's committed offsets follow completed checkpoints. No sleeps: the kill comes after a
# number of lines read from the job's stdout (a FIFO).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

start_mock --topic sums:4 --topic wins:4 --topic new-a:1 --topic live:2
for i in $(seq 1 400); do
  echo "k$((i % 7)):k$((i % 7)),$i"
done | kc -P -t sums -K:

cat > sum.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 8 }
local s = env:kafka_source{ bootstrap_servers = weir.args[1], topics = "sums", format = "csv",
  group_id = "sums-job", stopping_offsets = "latest",
  properties = { ["max.partition.fetch.bytes"] = 256 } }
  :map(function(r) return { r[1], tonumber(r[2]) } end)
  :key_by(function(r) return r[1] end)
  :sum(2)
  :map(function(r) return r[1] .. " " .. r[2] end)
s:write_text(weir.args[2])
-- stdout (the test's FIFO) gets long lines, so the job blocks on it long before its end
local pad = string.rep(".", 4000)
s:map(function(l) return l .. " " .. pad end):print()
env:execute()
LUA

run_weir run sum.lua -- "$BS" clean.txt
expect_rc 0 "the uninterrupted run"
[ "$(wc -l < clean.txt)" = 400 ] && ok || bad "400 running sums: $(wc -l < clean.txt)"

# killed after 30 lines of output, restored, run to the end
rm -f job.out && mkfifo job.out
"$WEIR" run sum.lua --checkpoint-dir ck --checkpoint-interval 0 -- "$BS" killed.txt \
  > job.out 2> job.err &
JOB=$!
exec 9< job.out
n=0
while [ "$n" -lt 30 ] && read -r -t 120 line <&9; do n=$((n + 1)); done
kill -KILL $JOB
{ wait $JOB; } 2>/dev/null
exec 9<&-
[ "$n" = 30 ] && ok || bad "30 lines before the kill: $n ($(cat job.err))"
lines_before=$(wc -l < killed.txt)
[ "$lines_before" -lt 400 ] && ls ck | grep -q '^chk-' && ok \
  || bad "killed mid-run with a checkpoint taken: $lines_before lines, $(ls ck)"
run_weir checkpoint inspect "ck/$(ls ck | grep '^chk-' | tail -1)"
expect_out_has "next offsets sums/0@" "inspect shows each partition's next offset"
run_weir run sum.lua --checkpoint-dir ck -- "$BS" killed.txt
expect_rc 0 "the restored run"
expect_err_has "continues at sums/" "the restore names the offsets it continues at"
# per key the sums must be the same sequence (partitions interleave differently between runs)
for f in clean killed; do sort -s -k1,1 $f.txt > $f.bykey; done
cmp -s clean.bykey killed.bykey && ok || bad "after kill -9 and restore every running sum is there exactly once ($lines_before lines before the restore): $(diff clean.bykey killed.bykey | head -5)"

# a windowed job (per-partition watermarks, tumbling 2 s counts per key) killed with SIGKILL
# and restored: every window result once in write_text. Every partition gets data (an empty
# one would hold the watermark back to the end), each in time order, so nothing is late.
for p in 0 1 2 3; do
  for i in $(seq $((p + 1)) 4 400); do echo "k$((i % 7)),$i"; done | kc -P -t wins -p $p
done
cat > win.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 8, auto_watermark_interval = 10 }
local s = env:kafka_source{ bootstrap_servers = weir.args[1], topics = "wins", format = "csv",
  stopping_offsets = "latest", properties = { ["max.partition.fetch.bytes"] = 256 },
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(r)
    return tonumber(r[2]) * 100 end) }
  :key_by(function(r) return r[1] end)
  :window(weir.windows.tumbling_event_time("2s"))
  :aggregate({
    create = function() return 0 end,
    add = function(_, n) return n + 1 end,
    result = function(n) return n end,
  }, function(key, ctx, counts, out)
    out(("%s %d %d"):format(key, ctx:window().start, counts[1]))
  end)
s:write_text(weir.args[2])
local pad = string.rep(".", 4000)
s:map(function(l) return l .. " " .. pad end):print()
env:execute()
LUA
run_weir run win.lua -- "$BS" wclean.txt
expect_rc 0 "the uninterrupted windowed run"
[ "$(wc -l < wclean.txt)" -gt 20 ] && ok || bad "window results: $(wc -l < wclean.txt)"
# the same run checkpointed after every batch (fresh directory, no kill) gives the same
# results: a batch that takes longer than the tick (the writer waited for) lets the tick
# release every finished partition before the source's END, and the +inf watermark must then
# still fire the last window ([40000, 42000) of k1, only the last message of partition 3)
run_weir run win.lua --checkpoint-dir wck0 --checkpoint-interval 0 -- "$BS" wck0.txt
expect_rc 0 "the uninterrupted windowed run checkpointed every batch"
cmp -s <(sort wclean.txt) <(sort wck0.txt) && ok || bad "checkpointed every batch, the same window results: $(diff <(sort wclean.txt) <(sort wck0.txt) | head -5)"
rm -f job.out && mkfifo job.out
"$WEIR" run win.lua --checkpoint-dir wck --checkpoint-interval 0 -- "$BS" wkilled.txt \
  > job.out 2> job.err &
JOB=$!
exec 9< job.out
n=0
while [ "$n" -lt 5 ] && read -r -t 120 line <&9; do n=$((n + 1)); done
kill -KILL $JOB
{ wait $JOB; } 2>/dev/null
exec 9<&-
[ "$n" = 5 ] && ok || bad "5 window results before the kill: $n ($(cat job.err))"
[ "$(wc -l < wkilled.txt)" -lt "$(wc -l < wclean.txt)" ] && ok || bad "killed mid-run"
run_weir run win.lua --checkpoint-dir wck -- "$BS" wkilled.txt
expect_rc 0 "the restored windowed run"
sort wclean.txt > wclean.sorted
sort wkilled.txt > wkilled.sorted
cmp -s wclean.sorted wkilled.sorted && ok || bad "after kill -9 and restore every window result is there exactly once: $(diff wclean.sorted wkilled.sorted | head -5)"

# the group's offsets were committed after the checkpoints: a job starting from them finds
# nothing left
cat > rest.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:kafka_source{ bootstrap_servers = weir.args[1], topics = "sums", group_id = "sums-job",
  starting_offsets = "committed", stopping_offsets = "latest" }:print()
env:execute()
LUA
run_weir run rest.lua -- "$BS"
expect_rc 0 "a job from the committed offsets"
expect_out "" "the committed offsets are the end: nothing left to read"

# a partition the checkpoint does not know (a topic of the pattern made since) starts at its
# first offset on restore, whatever starting_offsets says (Flink's KafkaSourceEnumerator: a
# partition found after the first discovery starts at EARLIEST): nothing in it is skipped
cat > new.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 1 }
env:kafka_source{ bootstrap_servers = weir.args[1], topics = "^new-.*",
  starting_offsets = "latest" }:map(function(v) return "seen " .. v end):print()
env:execute()
LUA
# wait_line FD PATTERN: reads lines from FD until one matches; $found is the last line read
# (the 60 s deadline is a safety net only: --progress writes a line a second)
wait_line() {
  found=""
  local deadline=$((SECONDS + 60))
  while [ "$SECONDS" -lt "$deadline" ] && read -r -t 30 line <&"$1"; do
    found=$line
    case "$line" in $2) return 0 ;; esac
  done
  return 1
}
rm -f job.out job.err && mkfifo job.out job.err
"$WEIR" run --progress new.lua --checkpoint-dir nck --checkpoint-interval 0 -- "$BS" \
  > job.out 2> job.err &
JOB=$!
exec 5< job.out 6< job.err
wait_line 6 "weir: 0 in, *" && ok || bad "the job runs: $found"
printf 'a,1\na,2\n' | kc -P -t new-a -p 0
wait_line 5 "seen a,2" && ok || bad "new-a/0's records after the start: $found"
wait_line 6 "weir: 2 in, *" && ok || bad "2 in: $found"
kill -KILL $JOB
{ wait $JOB; } 2>/dev/null
exec 5<&- 6<&-
ls nck | grep -q '^chk-' && ok || bad "a checkpoint was taken: $(ls nck)"
mock_cmd "topic new-b:1"
[ "$answer" = ok ] && ok || bad "topic new-b:1: $answer"
printf 'b,1\nb,2\n' | kc -P -t new-b -p 0
rm -f job.out job.err && mkfifo job.out job.err
"$WEIR" run new.lua --checkpoint-dir nck -- "$BS" > job.out 2> job.err &
JOB=$!
exec 5< job.out 6< job.err
wait_line 6 "weir: kafka_source * new-b partition 0 is not in the checkpoint: it starts at its first offset, 0" \
  && ok || bad "the restore says where new-b/0 starts: $found"
got=""
while read -r -t 30 line <&5; do
  got="$got$line;"
  case "$got" in *"seen b,2;"*) break ;; esac
done
case "$got" in
  *"seen b,1;seen b,2;"*) ok ;;
  *) bad "new-b/0's records, produced before the restore, are read: $got" ;;
esac
kill -TERM $JOB
{ wait $JOB; } 2>/dev/null
exec 5<&- 6<&-

# an unbounded source's per-partition watermarks after a restore: each partition's channel is
# active again (a restored channel marked idle would ignore its watermarks, and no window would
# fire before the end of input)
cat > live.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 1, auto_watermark_interval = 10 }
env:kafka_source{ bootstrap_servers = weir.args[1], topics = "live",
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(v)
    return tonumber(v:match(",(%d+)$")) end) }
  :key_by(function(v) return v:match("^(%w+),") end)
  :window(weir.windows.tumbling_event_time("1s"))
  :aggregate({
    create = function() return 0 end,
    add = function(_, n) return n + 1 end,
    result = function(n) return n end,
  }, function(key, ctx, counts, out)
    out(("window %s %d %d"):format(key, ctx:window().start, counts[1]))
  end)
  :print()
env:execute()
LUA
printf 'a,100\n' | kc -P -t live -p 0
printf 'a,200\n' | kc -P -t live -p 1
rm -f job.out job.err && mkfifo job.out job.err
"$WEIR" run --progress live.lua --checkpoint-dir lck --checkpoint-interval 0 -- "$BS" \
  > job.out 2> job.err &
JOB=$!
exec 5< job.out 6< job.err
wait_line 6 "weir: 2 in, *" && ok || bad "both partitions read: $found"
kill -KILL $JOB
{ wait $JOB; } 2>/dev/null
exec 5<&- 6<&-
ls lck | grep -q '^chk-' && ok || bad "a checkpoint was taken: $(ls lck)"
rm -f job.out job.err && mkfifo job.out job.err
"$WEIR" run live.lua --checkpoint-dir lck -- "$BS" > job.out 2> job.err &
JOB=$!
exec 5< job.out 6< job.err
wait_line 6 "weir: restored *" && ok || bad "restored: $found"
printf 'a,5000\n' | kc -P -t live -p 0
printf 'a,5000\n' | kc -P -t live -p 1
read -r -t 30 line <&5
[ "$line" = "window a 0 2" ] && ok \
  || bad "after the restore both partitions' watermarks move the source's: window 0 fires: $line"
kill -TERM $JOB
{ wait $JOB; } 2>/dev/null
exec 5<&- 6<&-

stop_mock
finish
