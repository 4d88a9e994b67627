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
# wait_err PATTERN: reads the job's stderr until a line matches (case pattern); $line is it
wait_err() {
  found=""
  while read -r -t 30 line <&6; do
    case "$line" in $1) found=$line; return 0 ;; esac
  done
  return 1
}
stop_job() {
  kill -TERM $JOB
  wait $JOB
  exec 5<&- 6<&-
}

start_mock --topic disc-a:2 --topic idle-a:1 --topic other:1
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
