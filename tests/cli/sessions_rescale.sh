#!/usr/bin/env bash
# Session windows on their own operator (weir.sessionop: an aggregate with merge and a window
# function, allowed lateness, late records to a side output) in a checkpoint: a job over a file
# stops itself with SIGTERM at a known line at parallelism 2, leaving a savepoint; restored at
# parallelism 1, 2 and 3 its sessions and late records are the uninterrupted run's (compared
# sorted: subtasks fire in subtask order). Out-of-order events (a key's burst arrives shuffled)
# make sessions grow and merge, and now and then an event comes 900 ms late (within the allowed
# lateness: its session fires again) or 2,500 ms late (dropped to the side output); watermarks
# are punctuated at parallelism 1.
. "$(dirname "$0")/lib.bash"

seq 0 59999 | awk '{ k = $1 % 37; j = int($1 / 37); b = int(j / 6); m = j % 6;
  split("0 300 200 900 500 1300", off, " "); t = b * 2000 + off[m + 1] + k;
  if ($1 % 997 == 0 && t > 3000) t -= 2500; else if ($1 % 331 == 0 && t > 3000) t -= 900;
  print "k" k, t }' > in.txt
cat > job.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
local stop_at = tonumber(weir.args[1])
local late = weir.output_tag("late")
local n = 0
local records = env:read_text_file("in.txt"):map(function(l)
    local k, t = l:match("(%S+) (%d+)")
    n = n + 1
    if n == stop_at then
      os.execute("kill -TERM $PPID") -- the shell's parent: weir, which drains and saves
    end
    return { k, tonumber(t) }
  end):set_parallelism(1):uid("parse")
  :assign_timestamps_and_watermarks(weir.watermarks.custom{
    on_event = function(_, _, ts, out) out:emit_watermark(ts - 700) end,
  }:with_timestamp_assigner(function(v) return v[2] end)):set_parallelism(1):uid("ts")
local s = records:key_by(function(v) return v[1] end)
  :window(weir.windows.event_time_session(400)):allowed_lateness(300)
  :side_output_late_data(late)
  :aggregate({ create = function() return 0 end, add = function(_, c) return c + 1 end,
               result = function(c) return c end, merge = function(a, b) return a + b end },
    function(key, ctx, c, out)
      local w = ctx:window()
      out(("%s [%d,%d) %d"):format(key, w.start, w.stop, c[1]))
    end):uid("sess")
s:write_text("sessions.txt"):set_parallelism(1):uid("sessions")
s:get_side_output(late):map(function(v) return v[1] .. " " .. v[2] end):uid("latefmt")
  :write_text("late.txt"):set_parallelism(1):uid("late")
env:execute()
LUA
OUTPUTS="sessions.txt late.txt"

run_weir explain job.lua
expect_out_has "{fast window operator: session}" "the sessions run on the session operator"
run_weir run job.lua --parallelism 2 -- none
expect_rc 0 "the uninterrupted run at parallelism 2"
mkdir want && mv $OUTPUTS want/
[ -s want/sessions.txt ] && ok || bad "the uninterrupted run fired no session"
[ -s want/late.txt ] && ok || bad "no late record (the test tests less than it says)"

run_weir run job.lua --parallelism 2 --checkpoint-dir ck -- 30000
expect_rc 0 "SIGTERM at line 30000: a savepoint"
sp=$(ls -d ck/sp-* | tail -1)
mkdir at_stop && cp $OUTPUTS at_stop/
[ -s at_stop/sessions.txt ] && ok || bad "no session fired before the stop"
run_weir checkpoint inspect "$sp"
expect_out_has "sess" "the savepoint holds the sessions' state"

for p in 2 1 3; do
  rm -rf run && mkdir run && cp at_stop/* run/ && cp job.lua in.txt run/
  (cd run && timeout 120 "$WEIR" run job.lua --parallelism $p --restore "../$sp" -- none \
    > out 2> err)
  rc=$?
  [ $rc = 0 ] && ok || bad "restore at parallelism $p: exit $rc ($(head -c 300 run/err))"
  for w in sessions late; do
    cmp -s <(sort run/$w.txt) <(sort want/$w.txt) && ok || bad "restore at parallelism $p: $w differ:
$(diff <(sort run/$w.txt) <(sort want/$w.txt) | head -5)"
  done
done

# the round trip of every batch's state through a checkpoint gives the same sessions (on the
# first 5,000 lines: it checks after every batch). The timeouts (120 s, as lib.bash's run_weir)
# only catch a hang: this run takes ~12 s of CPU under AddressSanitizer, and at load 11 on the
# 2 cores it took 43 s of wall clock (a fresh-clone CI run under that load hit the 60 s bound
# this test had).
mkdir short && head -5000 in.txt > short/in.txt && cp job.lua short/
(cd short && timeout 120 "$WEIR" run job.lua --parallelism 2 -- none > out 2> err) \
  && mv short/sessions.txt short/want.txt && rm short/late.txt && ok || bad "the short run failed"
(cd short && timeout 120 "$WEIR" run job.lua --parallelism 2 --verify-checkpoints -- none \
  > out 2> err)
rc=$?
[ $rc = 0 ] && ok || bad "--verify-checkpoints: exit $rc ($(head -c 300 short/err))"
[ -s short/want.txt ] && cmp -s <(sort short/sessions.txt) <(sort short/want.txt) && ok \
  || bad "--verify-checkpoints: sessions differ"

finish
