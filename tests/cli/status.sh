#!/usr/bin/env bash
# Visibility: the stall warning (virtual clock), --progress lines, and the full status on
# SIGUSR1 (a real signal to a running job).
. "$(dirname "$0")/lib.bash"

# Keyed before the assigner: every record goes to assigner subtask 2, so subtask 1 never
# emits a watermark and holds the window operator's watermark at -inf.
cat > stall.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
env:socket_text_stream("localhost", 9999)
  :map(function(line) return { line, 0 } end)
  :key_by(function(e) return e[1] end)
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("10s"))
  :reduce(function(a) return a end)
  :name("windows")
  :print()
env:execute()
LUA
{ echo "@0 a"; for i in $(seq 1 12); do echo "+1s a"; done; } > stall.replay

run_weir run stall.lua --replay stall.replay --stall-warning 5s
expect_rc 0 "a stalled job still runs"
expect_err_has "weir: warning: windows subtask 2/2: the watermark has not moved for 5s (still -inf) while records keep arriving; it is held back by input 0 from assign_timestamps_and_watermarks (stall.lua:6) subtask 1/2 (watermark -inf, active)" "the stall warning names the operator and the channel"
expect_err_has "with_idleness(...)" "the stall warning names the remedy"
[ "$(grep -c 'has not moved' err)" = 1 ] && ok || bad "one warning per stall, got $(grep -c 'has not moved' err)"

run_weir run stall.lua --replay stall.replay --stall-warning 0
[ "$(grep -c 'has not moved' err)" = 0 ] && ok || bad "--stall-warning 0 turns the warning off"

run_weir run stall.lua --replay stall.replay --stall-warning 5sec
expect_rc 2 "a bad --stall-warning is a usage error"
expect_err_has 'invalid duration "5sec"' "the bad duration is named"

run_weir run stall.lua --replay stall.replay --progress
expect_rc 0 "--progress"
expect_err_has "weir: 13 in, 1 out, " "the last progress line counts records in and out"
[ "$(grep -c '^weir: [0-9]* in,' err)" -ge 5 ] && ok || bad "about one progress line a second, got: $(cat err)"

# SIGUSR1 on a live job reading a FIFO.
cat > live.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:stdin()
  :map(function(l) print("got " .. l) return { l, 1000 } end)
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("10s"))
  :reduce(function(a) return a end)
  :print()
env:execute()
LUA
mkfifo fifo
"$WEIR" run live.lua < fifo > outL 2> errL &
pid=$!
exec 4> fifo
echo hello >&4
# the signal handlers are in place before the first record is read
for _ in $(seq 200); do grep -q "got hello" outL 2>/dev/null && break; sleep 0.05; done
for _ in $(seq 100); do
  kill -USR1 $pid
  sleep 0.1
  grep -q "watermark 999, active" errL 2>/dev/null && break
done
exec 4>&-
wait $pid; rc=$?
[ "$rc" = 0 ] && ok || bad "USR1 does not stop the job (exit $rc)"
grep -q "^weir status at processing time" errL && ok || bad "USR1 prints the status: $(cat errL)"
grep -q "input 0 from assign_timestamps_and_watermarks (live.lua:5) subtask 1/1: watermark 999, active" errL \
  && ok || bad "USR1 shows each input channel: $(cat errL)"
grep -q "key hello window \[0, 10000): 1 element(s), waits for 9999" errL \
  && ok || bad "USR1 shows pending windows: $(cat errL)"

finish
