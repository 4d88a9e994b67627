#!/usr/bin/env bash
# Kafka partition discovery on the mock cluster: a source whose topics are a pattern
# ("^disc-.*") with partition_discovery picks up a topic created while the job runs (the mock
# cluster cannot add partitions to an existing topic; a new partition of a named topic takes
# the same path), says so, reads it from its first offset, and gives it a fresh per-partition
# generator at the bottom: it holds the source's watermark back until it has data (a record it
# brings then is not late), and with with_idleness it does not once it is idle. No sleeps:
# the test waits for the job's lines (stdout and stderr are FIFOs; read -t is a safety net).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

cat > disc.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ auto_watermark_interval = 20 }
local strategy = weir.watermarks.monotonous():with_timestamp_assigner(function(v)
  return tonumber(v:match(",(%d+)$"))
end)
if weir.args[3] then
  strategy = strategy:with_idleness(weir.args[3])
end
env:kafka_source{ bootstrap_servers = weir.args[1], topics = weir.args[2],
  partition_discovery = "50ms", watermarks = strategy }
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

# start_job ARGS...: the job in the background with --progress, stdout on fd 5, stderr on fd 6
start_job() {
  rm -f job.out job.err && mkfifo job.out job.err
  "$WEIR" run --progress disc.lua -- "$BS" "$@" > job.out 2> job.err &
  JOB=$!
  exec 5< job.out 6< job.err
}
# wait_err PATTERN: reads the job's stderr until a line matches (case pattern); $found is it,
# else the last line read. The 60 s deadline is a safety net only: --progress writes a line a
# second, so a pattern that never matches must still end the loop.
wait_err() {
  found=""
  local deadline=$((SECONDS + 60))
  while [ "$SECONDS" -lt "$deadline" ] && read -r -t 30 line <&6; do
    found=$line
    case "$line" in $1) return 0 ;; esac
  done
  return 1
}
stop_job() {
  kill -TERM $JOB
  wait $JOB
  exec 5<&- 6<&-
}

start_mock --topic disc-a:2 --topic idle-a:1 --topic other:1 --topic al-a:1
printf 'a,100\n' | kc -P -t disc-a -p 0
printf 'a,200\n' | kc -P -t disc-a -p 1
printf 'a,999999\n' | kc -P -t other -p 0

# 1. no idleness: the new partition holds the watermark until it has data
start_job '^disc-.*'
wait_err "weir: 2 in, *" && ok || bad "the pattern's two partitions are read (not topic other)"
mock_cmd "topic disc-b:1"
[ "$answer" = ok ] && ok || bad "topic disc-b:1: $answer"
wait_err "weir: kafka_source * ^disc-.*: new partition disc-b/0: read from offset 0" \
  && ok || bad "the job says it found disc-b/0: $found"
printf 'a,5000\n' | kc -P -t disc-a -p 0
printf 'a,5000\n' | kc -P -t disc-a -p 1
wait_err "weir: 4 in, *"
case "$found" in
  *", watermark 99 ("*) ok ;;
  *) bad "disc-b/0, empty, holds the watermark at its bottom (still 99): $found" ;;
esac
printf 'a,150\n' | kc -P -t disc-b -p 0
for p in 0 1; do printf 'a,9000\n' | kc -P -t disc-a -p $p; done
printf 'a,9000\n' | kc -P -t disc-b -p 0
got=""
for i in 1 2; do read -r -t 30 line <&5 && got="$got$line;"; done
[ "$got" = "window a 0 3;window a 5000 2;" ] && ok \
  || bad "disc-b's record at 150 is not late: window 0 counts 3: $got"
stop_job

# 2. with idleness: the new (empty) partition goes idle and does not hold the watermark
printf 'a,100\n' | kc -P -t idle-a -p 0
start_job '^idle-.*' 300ms
wait_err "weir: 1 in, *" && ok || bad "idle-a is read"
mock_cmd "topic idle-b:1"
[ "$answer" = ok ] && ok || bad "topic idle-b:1: $answer"
wait_err "weir: kafka_source * ^idle-.*: new partition idle-b/0: read from offset 0" \
  && ok || bad "the job says it found idle-b/0: $found"
printf 'a,5000\n' | kc -P -t idle-a -p 0
read -r -t 30 line <&5
[ "$line" = "window a 0 1" ] && ok || bad "idle-b/0 idle: window 0 fires without it: $line"
stop_job

# 3. with watermark alignment: a partition found later is aligned by itself, as the first
# ones (Flink's SourceOperator aligns every split it is assigned): al-b/0, produced far ahead
# of al-a/0, is paused alone, and --progress and the final status say so
cat > align.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ auto_watermark_interval = 20 }
local strategy = weir.watermarks.monotonous()
  :with_timestamp_assigner(function(v) return tonumber(v:match(",(%d+)$")) end)
  :with_watermark_alignment("g", "5s", "100ms")
env:kafka_source{ bootstrap_servers = weir.args[1], topics = weir.args[2],
  partition_discovery = "50ms", watermarks = strategy }
  :map(function(v) return "seen " .. v end)
  :print()
env:execute()
for _, m in ipairs(env:status().alignment.groups[1].members) do
  for _, p in ipairs(m.partitions) do
    print(("partition %s/%d pauses %d"):format(p.topic, p.partition, p.pauses))
  end
end
LUA
printf 'a,1000\n' | kc -P -t al-a -p 0
rm -f job.out job.err && mkfifo job.out job.err
"$WEIR" run --progress align.lua -- "$BS" '^al-.*' > job.out 2> job.err &
JOB=$!
exec 5< job.out 6< job.err
read -r -t 30 line <&5
[ "$line" = "seen a,1000" ] && ok || bad "al-a/0 is read: $line"
mock_cmd "topic al-b:1"
[ "$answer" = ok ] && ok || bad "topic al-b:1: $answer"
wait_err "weir: kafka_source * ^al-.*: new partition al-b/0: read from offset 0" \
  && ok || bad "the job says it found al-b/0: $found"
printf 'b,1000000\n' | kc -P -t al-b -p 0
read -r -t 30 line <&5
[ "$line" = "seen b,1000000" ] && ok || bad "al-b/0 is read: $line"
wait_err "weir: *paused by watermark alignment: kafka_source * partition 0 (topic al-b) (group g: *" \
  && ok || bad "--progress shows al-b/0 paused by itself: $found"
case "$found" in
  *"topic al-a"*) bad "al-a/0, the slow one, is not paused: $found" ;;
  *) ok ;;
esac
# produced while al-b/0 is paused: al-a/0's records come, al-b/0's wait until al-a catches up
printf 'b,1001000\n' | kc -P -t al-b -p 0
printf 'a,2000\na,999000\na,1002000\n' | kc -P -t al-a -p 0
got=""
for i in 1 2 3 4; do read -r -t 30 line <&5 && got="$got$line;"; done
case "$got" in
  "seen a,2000;"*"seen b,1001000;"*) ok ;;
  *) bad "al-a/0 read on while al-b/0 waits, then al-b/0 resumes: $got" ;;
esac
case "$got" in
  *"seen a,2000;"*"seen a,999000;"*"seen a,1002000;"*) ok ;;
  *) bad "al-a/0's records in order: $got" ;;
esac
kill -TERM $JOB
wait $JOB
grep -qx "partition al-b/0 pauses [1-9]*" <&5 && ok || bad "the status counts al-b/0's pauses"
exec 5<&- 6<&-

# a bounded source discovers nothing: the option is a build error there
cat > bounded.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:kafka_source{ bootstrap_servers = "x:1", topics = "t", stopping_offsets = "latest",
  partition_discovery = "1m" }:print()
env:execute()
LUA
run_weir run bounded.lua
expect_rc 1 "partition_discovery on a bounded source"
expect_err_has "bounded.lua:3: kafka_source: partition_discovery needs an unbounded source" \
  "a build error naming the line"

stop_mock
finish
