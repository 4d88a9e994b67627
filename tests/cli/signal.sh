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

finish
