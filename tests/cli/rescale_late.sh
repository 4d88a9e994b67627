#!/usr/bin/env bash
# Lateness across a rescale (docs/API.md, Checkpoints; issue 14 item 7(e)): a window job whose
# input has late records (their windows fired and purged long before) right after the line
# where it stops itself with a savepoint at parallelism 2; restored at 1, 3 and 4 (and 2) the
# windows' output, the late side outputs and the late-record count are the uninterrupted run's:
# no late record re-creates a window and fires it again, none is lost or counted twice. A
# tumbling reduce (the fast operator) and a sliding aggregate with allowed lateness send late
# records to side outputs; a session window (the general operator) with allowed lateness counts
# them. Watermarks are punctuated at parallelism 1 (ts - 1 at every 50th line), so they do not
# depend on the parallelism or on the machine's speed, and late records arrive after the
# savepoint before the next watermark does. (A window's subtasks see the same watermarks, so each
# new subtask inherits one watermark; the key-group floors for subtasks that inherit different
# ones are checked in tests/lua/winckpt_spec.lua.)
. "$(dirname "$0")/lib.bash"

STOP=80000
# line n: key, n, its timestamp t (5 ms a line, and a 1000 ms pause every 100 lines, so that
# sessions close); after every 500th line (and every 3rd of the 15000 lines after STOP, where
# the savepoint is taken: the source stops a few thousand lines after the line that sent
# SIGTERM) a late record of 15 s
# ago (late for every window) and one of 1.5 s ago (late for the tumbling window, on time for
# the sliding one, late or merging for a session)
seq 1 200000 | awk -v stop=$STOP '{
  t = $1 * 5 + int($1 / 100) * 1000
  print "k" ($1 * 7) % 23, $1, t, "o"
  if ($1 > 3000 && ($1 % 500 == 0 || ($1 > stop && $1 <= stop + 15000 && $1 % 3 == 0))) {
    print "k" ($1 * 3) % 23, $1, t - 15000, "l"
    print "k" ($1 * 5) % 23, $1, t - 1500, "l"
  }
}' > in.txt
cat > job.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
local stop_at = tonumber(weir.args[1])
local records = env:read_text_file("in.txt"):map(function(l)
    local k, n, ts, kind = l:match("(%S+) (%d+) (%d+) (%a)")
    n, ts = tonumber(n), tonumber(ts)
    if n == stop_at and kind == "o" then
      os.execute("kill -TERM $PPID") -- the shell's parent: weir, which drains and saves
    end
    return { k, n, ts, kind == "o" }
  end):set_parallelism(1):uid("parse")
  :assign_timestamps_and_watermarks(weir.watermarks.custom{
    on_event = function(_, v, ts, out)
      if v[4] and v[2] % 50 == 0 then out:emit_watermark(ts - 1) end
    end,
  }:with_timestamp_assigner(function(v) return v[3] end)):set_parallelism(1):uid("ts")
local keyed = records:key_by(function(v) return v[1] end)
local late1, late2 = weir.output_tag("late1"), weir.output_tag("late2")
local fmt = function(v) return v[1] .. " " .. v[2] .. " " .. v[3] end
local tumbling = keyed:window(weir.windows.tumbling_event_time(1000))
  :side_output_late_data(late1):reduce(function(a, b)
    return { a[1], a[2] + b[2], math.max(a[3], b[3]), true } end):uid("win")
tumbling:map(fmt):uid("winfmt"):write_text("windows.txt"):set_parallelism(1):uid("windows")
tumbling:get_side_output(late1):map(fmt):uid("late1fmt")
  :write_text("late1.txt"):set_parallelism(1):uid("late1")
local sliding = keyed:window(weir.windows.sliding_event_time(2000, 1000)):allowed_lateness(1000)
  :side_output_late_data(late2):aggregate({
    create = function() return 0 end, add = function(v, acc) return acc + v[2] end,
    result = function(acc) return acc end, merge = function(a, b) return a + b end },
    function(key, ctx, sums, out)
      out(("%s %s %d"):format(key, tostring(ctx:window()), sums[1])) end):uid("slide")
sliding:write_text("sliding.txt"):set_parallelism(1):uid("sliding")
sliding:get_side_output(late2):map(fmt):uid("late2fmt")
  :write_text("late2.txt"):set_parallelism(1):uid("late2")
keyed:window(weir.windows.event_time_session(700)):allowed_lateness(200)
  :process(function(key, ctx, els, out)
    local w = ctx:window()
    out(("%s [%d,%d) %d"):format(key, w.start, w.stop, #els)) end):uid("sess")
  :write_text("sessions.txt"):set_parallelism(1):uid("sessions")
env:execute()
LUA
OUTPUTS="windows.txt late1.txt sliding.txt late2.txt sessions.txt"
late_count() { grep -o 'event_time_session process ([^)]*): [0-9]* late record(s) dropped' "$1" \
  | grep -o '[0-9]* late'; }

run_weir run job.lua --parallelism 2 -- none
expect_rc 0 "the uninterrupted run at parallelism 2"
want_late=$(late_count err)
mkdir want && mv $OUTPUTS want/
for f in $OUTPUTS; do
  [ -s want/$f ] && ok || bad "the uninterrupted run wrote nothing to $f"
done
[ -n "$want_late" ] && ok || bad "the uninterrupted run counted no late records: $(cat err)"

run_weir run job.lua --parallelism 2 --checkpoint-dir ck -- $STOP
expect_rc 0 "SIGTERM at line $STOP: a savepoint"
expect_err_has "stopped with a savepoint: ck/sp-" "the savepoint is named"
sp=$(ls -d ck/sp-* | tail -1)
mkdir at_stop && cp $OUTPUTS at_stop/
n=$(grep -c . at_stop/late1.txt)
m=$(grep -c . want/late1.txt)
{ [ "$n" -gt 0 ] && [ "$n" -lt "$m" ]; } && ok \
  || bad "the stop was not among the late records: $n of $m"
run_weir checkpoint inspect "$sp"
at=$(grep -o 'in.txt \[source-file-1\]: offset [0-9]*, line [0-9]*' out | grep -o '[0-9]*$')
{ [ -n "$at" ] && [ "$at" -gt $STOP ] && [ "$at" -lt $((STOP + 14000)) ]; } && ok \
  || bad "the savepoint is not among the late records: line '$at'"
# late records after the savepoint before the next watermark (every 50th on-time line)
tail -n +$((at + 1)) in.txt \
  | awk '$4 == "o" && $2 % 50 == 0 { exit } $4 == "l" { n++ } END { exit n < 2 }' && ok \
  || bad "no late records between the savepoint (line $at) and the next watermark"

for p in 2 1 3 4; do
  rm -rf run && mkdir run && cp at_stop/* run/ && cp job.lua in.txt run/
  (cd run && timeout 60 "$WEIR" run job.lua --parallelism $p --restore "../$sp" -- none \
    > out 2> err)
  rc=$?
  [ $rc = 0 ] && ok || bad "restore at parallelism $p: exit $rc ($(head -c 300 run/err))"
  grep -q "restored ../$sp" run/err && ok \
    || bad "restore at parallelism $p: not restored: $(cat run/err)"
  for f in $OUTPUTS; do
    cmp -s <(sort run/$f) <(sort want/$f) && ok || bad "restore at parallelism $p: $f differs:
$(diff <(sort run/$f) <(sort want/$f) | head -5)"
  done
  got_late=$(late_count run/err)
  [ "$got_late" = "$want_late" ] && ok || bad "restore at parallelism $p: '$got_late' late \
records counted, the uninterrupted run '$want_late'"
done

finish
