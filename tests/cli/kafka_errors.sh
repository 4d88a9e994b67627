#!/usr/bin/env bash
# Kafka errors on the mock cluster: an unreachable bootstrap server and a missing topic fail
# the job at start with a clear message; a bad option is a build error; a broker going down
# mid-run is reported, --progress shows it down and then up again, and the job goes on once it
# is up, losing nothing. (Messages
# that do not parse: tests/badinput/kafka-*.) No sleeps: the test waits for the job's lines.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

cat > read.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:kafka_source{ bootstrap_servers = weir.args[1], topics = weir.args[2],
  stopping_offsets = { [0] = tonumber(weir.args[3] or 0) }, timeout = "1s",
  properties = { ["reconnect.backoff.max.ms"] = 200 } }:print()
env:execute()
LUA

run_weir run read.lua -- 127.0.0.1:1 t
expect_rc 1 "an unreachable bootstrap server"
expect_err_has "weir: kafka_source 127.0.0.1:1 t: no answer from the bootstrap servers within 1000 ms" "names the servers and the wait"
expect_err_has "is a Kafka broker listening there?" "and says what to check"

start_mock --topic down:1
run_weir run read.lua -- "$BS" nosuch
expect_rc 1 "a missing topic"
expect_err_has "weir: kafka_source $BS nosuch: topic nosuch: no such topic" "names the topic"

cat > badopt.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:kafka_source{ bootstrap_servers = "x:1", topics = "t", starting_offsets = "newest" }:print()
env:execute()
LUA
run_weir run badopt.lua
expect_rc 1 "a bad starting_offsets"
expect_err_has "badopt.lua:3: kafka_source: starting_offsets must be \"earliest\", \"latest\", \"committed\" or { [partition] = offset }, got newest" "a build error naming the line"

# the broker goes down after 5 of 10 messages and comes back; the job reads all 10, and its
# --progress line says the broker is down, then (once librdkafka has reconnected) nothing
printf '1\n2\n3\n4\n5\n' | kc -P -t down -p 0
rm -f job.out job.err && mkfifo job.out job.err
"$WEIR" run --progress read.lua -- "$BS" down 10 > job.out 2> job.err &
JOB=$!
exec 5< job.out 6< job.err
got=""
for i in 1 2 3 4 5; do read -r -t 30 line <&5 && got="$got$line "; done
[ "$got" = "1 2 3 4 5 " ] && ok || bad "the first five before the broker goes down: $got"
mock_cmd "down 1"
[ "$answer" = ok ] && ok || bad "down 1: $answer"
reported=""
while read -r -t 30 line <&6; do
  case "$line" in *"librdkafka reconnects; the job goes on"*) reported=$line; break ;; esac
done
[ -n "$reported" ] && ok || bad "the job reports the broker down"
shown=""
while read -r -t 30 line <&6; do
  case "$line" in "weir: 5 in, "*"; kafka_source $BS down: 1 of 1 broker(s) down: "*) shown=$line; break ;; esac
done
case "$shown" in
  *"127.0.0.1:"*"/1 ("*"), 1 of 1 partition(s) without a reachable leader") ok ;;
  *) bad "--progress shows the broker down and the partition it leads: $shown" ;;
esac
mock_cmd "up 1"
[ "$answer" = ok ] && ok || bad "up 1: $answer"
normal=""
while read -r -t 30 line <&6; do
  case "$line" in *"broker(s) down"*) ;; "weir: 5 in, "*) normal=$line; break ;; esac
done
case "$normal" in
  *"late dropped, memory "*) ok ;;
  *) bad "--progress back to normal once the broker is up: $normal" ;;
esac
printf '6\n7\n8\n9\n10\n' | kc -P -t down -p 0
for i in 1 2 3 4 5; do read -r -t 30 line <&5 && got="$got$line "; done
again=""
while read -r -t 30 line <&6; do
  case "$line" in *"messages arrive again (the last error was: "*) again=$line; break ;; esac
done
[ -n "$again" ] && ok || bad "the job says when messages arrive again"
cat <&6 >/dev/null
wait $JOB
rc=$?
exec 5<&- 6<&-
expect_rc 0 "the job goes on after the broker is back and ends at offset 10"
[ "$got" = "1 2 3 4 5 6 7 8 9 10 " ] && ok || bad "all ten, once each: $got"
case "$reported" in "weir: kafka_source $BS down: "*) ok ;; *) bad "the report names the source: $reported" ;; esac

stop_mock
finish
