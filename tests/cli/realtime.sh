#!/usr/bin/env bash
# A real-time test (the only kind allowed to use the wall clock): a socket job with a 1 s
# processing-time window against a local server that sends two lines, stays open 2.5 s and
# closes. The window must fire within a generous tolerance of its end on the wall clock, and
# closing the connection must end the job cleanly. Tolerances are wide so CI load cannot
# make it flaky: the fire may lag its window end by up to 1.5 s.
. "$(dirname "$0")/lib.bash"
SERVE="$BUILD/tcp_serve"

cat > rt.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ end_of_input = "flink" } -- a fire at end of input would not count
env:socket_text_stream("127.0.0.1", tonumber(weir.args[1]))
  :key_by(function(w) return w end)
  :window(weir.windows.tumbling_processing_time("1s"))
  :process(function(key, ctx, elements, out)
    local lag = ctx:current_processing_time() - ctx:window().stop
    out(("%s n=%d lag_ok=%s"):format(key, #elements, tostring(lag >= 0 and lag < 1500)))
  end)
  :print()
env:execute()
LUA
printf 'tick\ntick\n' > two.txt
rm -f port; "$SERVE" -w 2500 port two.txt & srv=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
start=$(date +%s%N)
run_weir run rt.lua -- "$(cat port)"
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
wait $srv
expect_rc 0 "the job ends cleanly when the server closes"
expect_out "tick n=2 lag_ok=true" "the 1 s window fired once, close to its end on the wall clock"
if [ "$elapsed_ms" -ge 2000 ] && [ "$elapsed_ms" -lt 15000 ]; then ok; else
  bad "the job should end after the server closes (~2.5 s), took ${elapsed_ms} ms"; fi

finish
