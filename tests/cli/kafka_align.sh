#!/usr/bin/env bash
# Watermark alignment on the mock cluster (issue 18, item 4): partition 1 of a topic is
# produced far ahead in event time of partition 0. With with_watermark_alignment the source
# pauses partition 1 (rd_kafka_pause_partitions): --progress and kill -USR1 say so, records
# produced to it meanwhile are not read while partition 0's are, and once partition 0 catches
# up partition 1 resumes from its next offset, nothing lost or read twice. No sleeps: the
# job's stdout and stderr are FIFOs the test reads line by line (read -t is a safety net).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

cat > align.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ auto_watermark_interval = 20 }
local strategy = weir.watermarks.monotonous()
  :with_timestamp_assigner(function(v) return tonumber(v:match(",(%d+)$")) end)
  :with_watermark_alignment("g", "5s", "100ms")
env:kafka_source{ bootstrap_servers = weir.args[1], topics = "far", watermarks = strategy }
  :map(function(v) return "seen " .. v end)
  :print()
env:execute()
for _, m in ipairs(env:status().alignment.groups[1].members) do
  for _, p in ipairs(m.partitions) do
    print(("partition %d pauses %d"):format(p.partition, p.pauses))
  end
end
LUA

start_mock --topic far:2
produce() { # partition, name, first ts, count (ts step 1000)
  local i out=""
  for ((i = 0; i < $4; i++)); do out+="$2,$(($3 + i * 1000))"$'\n'; done
  printf '%s' "$out" | kc -P -t far -p "$1"
}
produce 0 slow 1000 10
produce 1 fast 1000000 10

rm -f job.out job.err && mkfifo job.out job.err
"$WEIR" run align.lua --progress -- "$BS" > job.out 2> job.err &
JOB=$!
exec 9< job.out 6< job.err
# read_until FD N PATTERN: reads lines from FD into got.FD until N of them match PATTERN (the
# 60 s deadline is a safety net only: --progress writes a line a second, so a pattern that
# never matches must still end the loop)
read_until() {
  local n=0 line deadline=$((SECONDS + 60))
  while [ "$n" -lt "$2" ] && [ "$SECONDS" -lt "$deadline" ] && read -r -t 30 line <&"$1"; do
    echo "$line" >> "got.$1"
    case "$line" in $3) n=$((n + 1)) ;; esac
  done
  [ "$n" -ge "$2" ]
}

read_until 9 20 "seen *" && ok || bad "the first 20 records: $(cat got.9)"
# the next update pauses partition 1: 990 s ahead of partition 0 (max drift 5 s)
read_until 6 1 "weir: *, paused by watermark alignment: kafka_source * far partition 1 (topic far) (group g: watermark 1008999, * ahead of the minimum 9999, max drift 5.0s)" && ok \
  || bad "--progress shows partition 1 paused: $(cat got.6)"
kill -USR1 $JOB
read_until 6 1 "paused by watermark alignment: *" && ok || bad "kill -USR1: $(cat got.6)"
grep -q "^paused by watermark alignment: kafka_source [0-9.:]* far partition 1 (topic far) (group g): watermark 1008999 is .* ahead of the group's minimum 9999 (max drift 5.0s), for [0-9]" got.6 \
  && ok || bad "kill -USR1 shows partition 1 paused and why: $(cat got.6)"

# produced while paused: partition 1's records wait, partition 0's (produced after) come
produce 1 fast 1010000 5
produce 0 slow 11000 5
read_until 9 5 "seen slow,1[1-5]000" && ok || bad "partition 0's new records: $(cat got.9)"
grep -q "seen fast,101[0-4]000" got.9 && bad "partition 1 was read while paused: $(cat got.9)" \
  || ok
# partition 0 catches up: partition 1 resumes and its five records come
produce 0 slow 1012000 1
read_until 9 5 "seen fast,101[0-4]000" && ok || bad "partition 1 resumed: $(cat got.9)"
kill -TERM $JOB
cat <&9 >> got.9
cat <&6 >> got.6 &
wait $JOB; rc=$?; exec 9<&- 6<&-
expect_rc 0 "the job stops on SIGTERM"
[ "$(grep -c '^seen' got.9)" = 31 ] && [ "$(grep '^seen' got.9 | sort -u | wc -l)" = 31 ] && ok \
  || bad "every record once, none lost or read twice: $(cat got.9)"
# partition 0's catch-up record takes it past the bound of the last update (min 14999 + 5 s):
# paused at once, as Flink's updateCurrentSplitWatermark, and resumed by the next update
grep -qx "partition 0 pauses 1" got.9 && ok || bad "partition 0 paused once: $(cat got.9)"
grep -Eqx "partition 1 pauses [1-9][0-9]*" got.9 && ok \
  || bad "env:status() counts partition 1's pauses: $(cat got.9)"

stop_mock
finish
