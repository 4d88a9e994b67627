#!/usr/bin/env bash
# --progress on a terminal (a pseudo-terminal from script(1)): the status line is erased before
# anything else is written (print sinks, Lua's print, kill -USR1's status), so output never
# starts inside it; "behind" is in human units and never negative.
. "$(dirname "$0")/lib.bash"
command -v script >/dev/null || { echo "script(1) (util-linux) is missing"; exit 1; }

# ok when, in the terminal output FILE, every progress line is followed by its erasure
# ("\r\e[K") or ends the output with a newline, and (at least N progress lines were drawn)
check_erased() {
  python3 - "$1" "$2" <<'PY'
import re, sys
data = open(sys.argv[1], "rb").read()
lines = list(re.finditer(rb"weir: \d+ in, [^\r\n\x1b]*? MiB", data))
bad = [m for m in lines if not re.match(rb"\r\x1b\[K|\r?\n", data[m.end():m.end() + 4])]
if len(lines) < int(sys.argv[2]) or bad:
    print("progress lines: %d, not erased: %d; first: %r" % (len(lines), len(bad),
          data[bad[0].start():bad[0].end() + 40] if bad else b""))
    sys.exit(1)
PY
}

cat > prog.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:socket_text_stream("localhost", 9999)
  :map(function(l) print("got " .. l) return { l, tonumber(l) } end)
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function() return "k" end)
  :window(weir.windows.tumbling_event_time("1s"))
  :reduce(function(a) return a end)
  :print()
env:execute()
LUA
{ echo "@0 0"; for i in $(seq 1 6); do echo "+2s ${i}000"; done; } > prog.replay

script -q -e -c "$WEIR run prog.lua --replay prog.replay --progress" tty.out </dev/null >/dev/null
rc=$?
expect_rc 0 "--progress on a terminal"
msg=$(check_erased tty.out 10) && ok || bad "the progress line is not erased before output: $msg"
grep -qa $'\r\e\\[K(0,0)' tty.out && ok || bad "a print sink's line starts after the erasure"
grep -qa $'\r\e\\[Kgot 1000' tty.out && ok || bad "Lua's print starts after the erasure"
grep -qa "weir: 7 in, 7 out, .*watermark +inf" tty.out && ok || bad "the last line stays"

# kill -USR1 while the line is drawn: its status starts on a line of its own
cat > live.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:stdin()
  :map(function(l) print("got " .. l) return l end)
  :print()
env:execute()
LUA
mkfifo fifo
script -q -f -e -c "echo \$\$ > pid; exec $WEIR run live.lua --progress < fifo" usr1.out \
  </dev/null >/dev/null &
spid=$!
exec 4> fifo
echo hello >&4
for _ in $(seq 200); do grep -qa "weir: 1 in" usr1.out 2>/dev/null && break; sleep 0.05; done
for _ in $(seq 100); do
  kill -USR1 "$(cat pid)"
  sleep 0.1
  grep -qa "weir status at processing time" usr1.out && break
done
echo after >&4
for _ in $(seq 200); do grep -qa "got after" usr1.out 2>/dev/null && break; sleep 0.05; done
exec 4>&-
wait $spid
rc=$?
expect_rc 0 "the live job ends with its input"
msg=$(check_erased usr1.out 1) && ok || bad "the progress line is not erased before USR1's status: $msg"
grep -qa "weir status at processing time" usr1.out && ok || bad "USR1 printed its status"

# "behind" in human units; a watermark ahead of the clock is said so, never negative
cat > lag.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:socket_text_stream("localhost", 9999)
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(l) return tonumber(l) end))
  :key_by(function() return "k" end)
  :window(weir.windows.tumbling_event_time("1s"))
  :reduce(function(a) return a end)
  :print()
env:execute()
LUA
printf '@1718157600000 0\n+2s 1\n+2s 2\n' > behind.replay
run_weir run lag.lua --replay behind.replay --progress
expect_rc 0 "progress with a clock far ahead"
expect_err_has "watermark 0 (19886d 02h behind)" "days and hours behind"
printf '@0 1718157600000\n+2s 1718157600001\n+2s 1718157600002\n' > ahead.replay
run_weir run lag.lua --replay ahead.replay --progress
expect_rc 0 "progress with event time ahead of the clock"
expect_err_has "ahead of the clock)" "a watermark ahead of the clock says so"
grep -q "(-" "$TMP/err" && bad "a negative lag: $(grep -m1 '(-' "$TMP/err")" || ok

finish
