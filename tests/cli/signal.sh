#!/usr/bin/env bash
# SIGINT/SIGTERM: the sources stop, records in flight drain, sinks flush, close() runs,
# exit 0; a second signal exits at once. A real-time test, written to be tolerant.
. "$(dirname "$0")/lib.bash"

cat > wait.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:stdin()
  :map({ map = function(_, l) return "got " .. l end,
         close = function() print("closed") end })
  :print()
env:execute()
LUA

for sig in INT TERM; do
  mkfifo "fifo$sig"
  "$WEIR" run wait.lua < "fifo$sig" > "out$sig" 2> "err$sig" &
  pid=$!
  exec 4> "fifo$sig"
  echo hello >&4
  for _ in $(seq 200); do grep -q "got hello" "out$sig" 2>/dev/null && break; sleep 0.05; done
  kill -s "$sig" $pid
  for _ in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
  wait $pid; rc=$?
  exec 4>&-
  [ "$rc" = 0 ] && ok || bad "SIG$sig: exit status $rc, expected 0 ($(cat "err$sig"))"
  [ "$(cat "out$sig")" = "got hello
closed" ] && ok || bad "SIG$sig: output was: $(cat "out$sig")"
done

# A job stuck in user code: the first signal cannot be served, the second exits at once.
cat > stuck.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:from_elements(1):map(function(n) print("stuck") io.stdout:flush() while true do end end)
  :print()
env:execute()
LUA
"$WEIR" run stuck.lua > outS 2> errS &
pid=$!
for _ in $(seq 200); do grep -q stuck outS 2>/dev/null && break; sleep 0.05; done
kill -INT $pid; sleep 0.2; kill -INT $pid
for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
if kill -0 $pid 2>/dev/null; then
  bad "second SIGINT did not end weir"
  kill -9 $pid
else
  wait $pid; rc=$?
  [ "$rc" = 1 ] && ok || bad "second SIGINT: exit status $rc, expected 1"
fi

# A forced exit keeps what was emitted: a map spins after 4,999 records went to the print sink
# (still in weir's output buffer); the second signal writes them out and names the map.
cat > spin.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:generate(function(i) return i end, { count = 5000 })
  :map(function(n)
    if n == 4999 then
      io.stderr:write("spinning\n")
      while true do end
    end
    return n
  end)
  :print()
env:execute()
LUA
"$WEIR" run spin.lua > outR 2> errR &
pid=$!
for _ in $(seq 200); do grep -q spinning errR 2>/dev/null && break; sleep 0.05; done
# the first signal cannot be served; send again until weir is gone (two close together merge)
for _ in $(seq 100); do kill -TERM $pid 2>/dev/null || break; sleep 0.1; done
wait $pid; rc=$?
[ "$rc" = 1 ] && ok || bad "runaway map: exit status $rc, expected 1"
[ "$(wc -l < outR)" = 4999 ] && [ "$(tail -n 1 outR)" = 4998 ] && ok \
  || bad "runaway map: $(wc -l < outR) lines reached stdout, expected all 4999"
grep -qF "weir: interrupted again while map (spin.lua:4) was running, exiting" errR && ok \
  || bad "runaway map: stderr does not name the map: $(cat errR)"

# A stop fires no window, and says what it dropped, per window operator.
cat > pending.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
local s = env:stdin():map(function(l) return tonumber(l) end)
s:filter(function(n) return n == 100 end):print()
s:key_by(function(n) return n % 3 end):count_window(1000)
  :reduce(function(a, b) return a + b end)
  :print()
env:execute()
LUA
mkfifo fifoW
"$WEIR" run pending.lua < fifoW > outW 2> errW &
pid=$!
exec 4> fifoW
seq 1 100 >&4
for _ in $(seq 200); do grep -qx 100 outW 2>/dev/null && break; sleep 0.05; done
kill -TERM $pid
for _ in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
wait $pid; rc=$?
exec 4>&-
[ "$rc" = 0 ] && ok || bad "stop with pending windows: exit status $rc, expected 0"
grep -qF "weir: count_window global reduce (pending.lua:6): stopped with 3 pending window(s) holding 100 element(s); dropped (a stop fires no window)" errW \
  && ok || bad "stop with pending windows: stderr was: $(cat errW)"

# A stalled stdout bounds the stop: a reader that never reads holds the pipe full. The stop
# waits 5 s for it, then drops what is pending, says so, and exits 0 (the stop's status).
cat > flood.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:generate(function(i) return i end):print()
env:execute()
LUA
# wait until weir blocks in the pipe (Linux: /proc/PID/wchan); elsewhere just go on
blocked() { for _ in $(seq 100); do grep -q pipe_write "/proc/$1/wchan" 2>/dev/null && return; sleep 0.05; done; }
mkfifo fifoS
exec 5<> fifoS
"$WEIR" run flood.lua > fifoS 2> errS &
pid=$!
blocked $pid
start=$(date +%s)
kill -TERM $pid
for _ in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
if kill -0 $pid 2>/dev/null; then
  bad "stalled stdout: the stop did not end weir within 15 s"
  kill -9 $pid
fi
wait $pid; rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" = 0 ] && ok || bad "stalled stdout: exit status $rc, expected 0 ($(cat errS))"
[ "$took" -ge 4 ] && ok || bad "stalled stdout: the stop gave up after ${took}s, before 5 s"
grep -qE "weir: stop: standard output took no data for 5s; up to [0-9]+ byte\(s\) of output dropped" errS \
  && ok || bad "stalled stdout: stderr was: $(cat errS)"

# The second signal does not wait on a stalled stdout either (at most 2 s).
"$WEIR" run flood.lua > fifoS 2> errS2 &
pid=$!
blocked $pid
for _ in $(seq 100); do kill -TERM $pid 2>/dev/null || break; sleep 0.1; done
wait $pid; rc=$?
exec 5<&-
[ "$rc" = 1 ] && ok || bad "stalled stdout, second signal: exit status $rc, expected 1"
grep -qE "weir: interrupted again: [0-9]+ byte\(s\) of output not written" errS2 && ok \
  || bad "stalled stdout, second signal: stderr was: $(cat errS2)"
grep -qF "weir: interrupted again while print (flood.lua:3) was running, exiting" errS2 && ok \
  || bad "stalled stdout, second signal: stderr does not name the print sink: $(cat errS2)"

finish
