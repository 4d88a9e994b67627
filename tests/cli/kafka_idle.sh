#!/usr/bin/env bash
# Per-partition watermarks and idleness on the mock cluster: a partition that never gets data
# holds the source's watermark back (no window fires until it gets a record), and with
# with_idleness it goes idle and the windows fire without it. No sleeps: the job's stdout is
# a FIFO the test reads line by line (read -t is only a safety net).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

cat > idle.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ auto_watermark_interval = 20 }
local strategy = weir.watermarks.monotonous():with_timestamp_assigner(function(v)
  return tonumber(v:match(",(%d+)$"))
end)
if weir.args[2] == "idle" then
  strategy = strategy:with_idleness("1s")
end
local s = env:kafka_source{ bootstrap_servers = weir.args[1], topics = weir.args[3],
  watermarks = strategy }
s:map(function(v) return "seen " .. v end):print()
s:key_by(function(v) return v:match("^(%w+),") end)
  :window(weir.windows.tumbling_event_time("10s"))
  :aggregate({
    create = function() return 0 end,
    add = function(_, n) return n + 1 end,
    result = function(n) return n end,
  }, function(user, ctx, counts, out)
    out(("window %s %d %d"):format(user, ctx:window().start, counts[1]))
  end)
  :print()
env:execute()
LUA

# start_job MODE TOPIC: the job in the background, its stdout on fd 9
start_job() {
  rm -f job.out && mkfifo job.out
  "$WEIR" run idle.lua -- "$BS" "$1" "$2" > job.out 2> job.err &
  JOB=$!
  exec 9< job.out
}
# read_until N PATTERN: reads lines from fd 9 into got until N of them match PATTERN
read_until() {
  local n=0 line
  while [ "$n" -lt "$1" ] && read -r -t 30 line <&9; do
    echo "$line" >> got
    case "$line" in $2) n=$((n + 1)) ;; esac
  done
}
produce() { # topic: p0, p1 and p2 get records at 2 s, 12 s and 25 s; partition 3 nothing
  for p in 0 1 2; do
    printf 'p%d,2000\np%d,12000\np%d,25000\n' $p $p $p | kc -P -t "$1" -p $p
  done
}
WINDOWS="window p0 0 1
window p0 10000 1
window p1 0 1
window p1 10000 1
window p2 0 1
window p2 10000 1"

start_mock --topic held:4 --topic idle:4

# without idleness: partition 3 holds the watermark at -inf
produce held
rm -f got
start_job held held
read_until 9 "seen *"
[ "$(grep -c '^window' got)" = 0 ] && ok || bad "no window before partition 3 has data: $(cat got)"
printf 'p3,40000\n' | kc -P -t held -p 3
read_until 6 "window *"
kill -TERM $JOB; wait $JOB; rc=$?; exec 9<&-
expect_rc 0 "the job stops on SIGTERM"
[ "$(grep '^window' got | sort)" = "$WINDOWS" ] && ok || bad "the windows up to 25 s fire once partition 3 moves: $(cat got)"
awk '/^window/ && !seen3 { bad = 1 } /^seen p3,/ { seen3 = 1 } END { exit bad }' got && ok \
  || bad "every window fired after partition 3's record: $(cat got)"

# with idleness: partition 3 goes idle and no longer holds the watermark back
produce idle
rm -f got
start_job idle idle
read_until 6 "window *"
kill -TERM $JOB; wait $JOB; rc=$?; exec 9<&-
expect_rc 0 "the job stops on SIGTERM"
[ "$(grep '^window' got | sort)" = "$WINDOWS" ] && ok || bad "the windows fire with partition 3 idle: $(cat got) $(cat job.err)"
[ "$(grep -c '^seen' got)" = 9 ] && ok || bad "all nine records seen: $(cat got)"

stop_mock
finish
