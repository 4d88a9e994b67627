#!/usr/bin/env bash
# Rescale (docs/API.md, Checkpoints; issue 14 item 7(e)): a keyed job (a keyed process function
# with value, list, map, reducing and aggregating state and event-time timers, and a rolling
# sum) over a file source stops itself with SIGTERM at a known line at parallelism 2, leaving a
# savepoint; restored at parallelism 1, 2, 3 and 4 its output is the uninterrupted run's. The
# rolling sums (one write_text at parallelism 1, fed record by record) are byte-identical; the
# timers' output is compared sorted at another parallelism, because subtasks fire their timers
# in subtask order when a watermark arrives, so lines of different keys interleave differently
# (at parallelism 2 it is byte-identical). Watermarks are punctuated at parallelism 1, so they
# do not depend on the parallelism or on the machine's speed.
. "$(dirname "$0")/lib.bash"

seq 1 200000 | awk '{ print "k" ($1 * 7) % 23, $1 }' > in.txt
cat > job.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
local stop_at = tonumber(weir.args[1])
local records = env:read_text_file("in.txt"):map(function(l)
    local k, n = l:match("(%S+) (%d+)")
    n = tonumber(n)
    if n == stop_at then
      os.execute("kill -TERM $PPID") -- the shell's parent: weir, which drains and saves
    end
    return { k, n }
  end):set_parallelism(1):uid("parse")
  :assign_timestamps_and_watermarks(weir.watermarks.custom{
    on_event = function(_, _, ts, out) out:emit_watermark(ts - 1) end,
  }:with_timestamp_assigner(function(v) return v[2] end)):set_parallelism(1):uid("ts")
local keyed = records:key_by(function(v) return v[1] end)
keyed:process({
  open = function(self, rt)
    self.count = rt:value_state("count")
    self.last = rt:list_state("last")
    self.seen = rt:map_state("seen")
    self.sum = rt:reducing_state("sum", function(a, b) return a + b end)
    self.avg = rt:aggregating_state("avg", { create = function() return { 0, 0 } end,
      add = function(v, acc) return { acc[1] + v, acc[2] + 1 } end,
      result = function(acc) return acc[1] / acc[2] end })
  end,
  process = function(self, v, ctx)
    self.count:update((self.count:value() or 0) + 1)
    local l = self.last:get()
    if #l == 3 then
      table.remove(l, 1)
      self.last:update(l)
    end
    self.last:add(v[2])
    self.seen:put(v[2] % 5, v[2])
    self.sum:add(v[2])
    self.avg:add(v[2])
    ctx:timer_service():register_event_time_timer(v[2] - v[2] % 1000 + 1000)
  end,
  on_timer = function(self, ts, ctx, out)
    local m = {}
    for k, x in self.seen:pairs() do m[#m + 1] = k .. "=" .. x end
    table.sort(m)
    out(("%s@%d n=%d last=%s seen=%s sum=%d avg=%.2f"):format(ctx:current_key(), ts,
      self.count:value(), table.concat(self.last:get(), ","), table.concat(m, ","),
      self.sum:get(), self.avg:get()))
  end,
}):uid("proc"):write_text("timers.txt"):set_parallelism(1):uid("timers")
keyed:sum(2):uid("rsum"):map(function(v) return v[1] .. " " .. v[2] end):uid("fmt")
  :write_text("sums.txt"):set_parallelism(1):uid("sums")
-- windows over the same records: a keyed tumbling reduce (the fast operator), a session
-- window with a process function (the general operator, merging) and a sliding count,
-- compared sorted like timers.txt
local fmt = function(v) return v[1] .. " " .. v[2] end
keyed:window(weir.windows.tumbling_event_time(5000)):reduce(function(a, b)
  return { a[1], a[2] + b[2] } end):uid("win")
  :map(fmt):uid("winfmt"):write_text("windows.txt"):set_parallelism(1):uid("windows")
keyed:window(weir.windows.event_time_session(700)):process(function(key, ctx, els, out)
  local w = ctx:window()
  out(("%s [%d,%d) %d"):format(key, w.start, w.stop, #els)) end):uid("sess")
  :write_text("sessions.txt"):set_parallelism(1):uid("sessions")
keyed:window(weir.windows.sliding_event_time(6000, 2000)):aggregate({
  create = function() return 0 end, add = function(_, acc) return acc + 1 end,
  result = function(acc) return acc end, merge = function(a, b) return a + b end })
  :uid("slide"):map(function(n) return tostring(n) end):uid("slidefmt")
  :write_text("sliding.txt"):set_parallelism(1):uid("sliding")
env:execute()
LUA
OUTPUTS="timers.txt sums.txt windows.txt sessions.txt sliding.txt"

run_weir run job.lua --parallelism 2 -- none
expect_rc 0 "the uninterrupted run at parallelism 2"
mkdir want && mv $OUTPUTS want/
[ "$(wc -l < want/sums.txt)" = 200000 ] && ok || bad "the uninterrupted run wrote $(wc -l < want/sums.txt) sums"
[ -s want/timers.txt ] && ok || bad "the uninterrupted run fired no timers"

run_weir run job.lua --parallelism 2 --checkpoint-dir ck -- 80000
expect_rc 0 "SIGTERM at line 80000: a savepoint"
expect_err_has "stopped with a savepoint: ck/sp-" "the savepoint is named"
sp=$(ls -d ck/sp-* | tail -1)
mkdir at_stop && cp $OUTPUTS at_stop/
n=$(wc -l < at_stop/sums.txt)
{ [ "$n" -ge 80000 ] && [ "$n" -lt 200000 ]; } && ok || bad "the stop was not in the middle: $n sums"
[ -s at_stop/timers.txt ] && ok || bad "no timer fired before the stop"
run_weir checkpoint inspect "$sp"
expect_out_has "keyed/proc" "the savepoint holds the keyed process's state"
expect_out_has "keyed/rsum" "the savepoint holds the rolling sum's state"
expect_out_has " B 1 keys, 5 state entries, 1 timers" "inspect counts a key group's keys, entries, timers"

for p in 2 1 3 4; do
  rm -rf run && mkdir run && cp at_stop/* run/ && cp job.lua in.txt run/
  (cd run && timeout 60 "$WEIR" run job.lua --parallelism $p --restore "../$sp" -- none \
    > out 2> err)
  rc=$?
  [ $rc = 0 ] && ok || bad "restore at parallelism $p: exit $rc ($(head -c 300 run/err))"
  grep -q "restored ../$sp: read_text_file in.txt continues after line $n " run/err && ok \
    || bad "restore at parallelism $p: no restore at line $n reported: $(cat run/err)"
  cmp -s run/sums.txt want/sums.txt && ok || bad "restore at parallelism $p: sums differ:
$(diff run/sums.txt want/sums.txt | head -5)"
  if [ $p = 2 ]; then
    cmp -s run/timers.txt want/timers.txt && ok || bad "restore at parallelism 2: timers differ:
$(diff run/timers.txt want/timers.txt | head -5)"
  fi
  cmp -s <(sort run/timers.txt) <(sort want/timers.txt) && ok || bad "restore at parallelism $p: timer lines differ:
$(diff <(sort run/timers.txt) <(sort want/timers.txt) | head -5)"
  for w in windows sessions sliding; do
    cmp -s <(sort run/$w.txt) <(sort want/$w.txt) && ok || bad "restore at parallelism $p: $w differ:
$(diff <(sort run/$w.txt) <(sort want/$w.txt) | head -5)"
  done
done

# write_text at the job's parallelism (a directory of files 1..N): a savepoint at parallelism
# 4 (line 30000), a restore at 4 killed (-9) at line 190000, then a restore at 2: files 3 and 4,
# which no subtask writes now, lose the tail written after the savepoint too; the union of the
# lines is the uninterrupted run's. A file cannot become a directory or back.
sed -e 's/:write_text("sums.txt"):set_parallelism(1)/:write_text("sums")/' \
  -e 's/os.execute("kill -TERM $PPID")/os.execute("kill -" .. weir.args[2] .. " $PPID")/' \
  job.lua > dir.lua
rm -rf ck4 sums $OUTPUTS
run_weir run dir.lua --parallelism 4 -- none
expect_rc 0 "the uninterrupted run with a directory sink"
cat sums/* | sort > want/sums.sorted
rm -rf sums $OUTPUTS
run_weir run dir.lua --parallelism 4 --checkpoint-dir ck4 -- 30000 TERM
expect_rc 0 "a savepoint at parallelism 4"
committed=$(ls -d ck4/sp-* | tail -1)
# (bash's "Killed" notice to /dev/null)
{ run_weir run dir.lua --parallelism 4 --checkpoint-dir ck4 --checkpoint-interval 1h \
  -- 190000 9; } 2>/dev/null
expect_rc 137 "restored at parallelism 4, then killed"
run_weir checkpoint inspect "$committed"
tail_bytes=0
for f in 3 4; do
  c=$(grep -o "sums/$f: [0-9]* bytes committed" out | grep -o ' [0-9]* ' | tr -d ' ')
  tail_bytes=$((tail_bytes + $(wc -c < sums/$f) - c))
done
[ $tail_bytes -gt 0 ] && ok || bad "no uncommitted tail in files 3 and 4 to cut (the test tests nothing)"
run_weir run dir.lua --parallelism 2 --checkpoint-dir ck4 -- none
expect_rc 0 "restore at parallelism 2 with a directory sink"
cmp -s <(cat sums/* | sort) want/sums.sorted && ok || bad "the directory's lines differ:
$(diff <(cat sums/* | sort) want/sums.sorted | head -5)"
run_weir run dir.lua --parallelism 1 --restore "$committed" -- none
expect_rc 1 "a directory sink restored at parallelism 1"
expect_err_has "wrote the directory sums, at parallelism 1 it writes a file" \
  "a directory sink at parallelism 1 is refused, naming it"

# a keyed operator's max parallelism is fixed by the checkpoint
sed 's/local env = weir.env()/local env = weir.env{ max_parallelism = 64 }/' job.lua > maxp.lua
rm -rf run && mkdir run && cp at_stop/* run/ && cp maxp.lua in.txt run/
(cd run && timeout 60 "$WEIR" run maxp.lua --parallelism 2 --restore "../$sp" -- none \
  > out 2> err)
[ $? = 1 ] && ok || bad "another max parallelism: not refused"
grep -qF "max parallelism 128 in the checkpoint, 64 now (key groups are fixed)" run/err && ok \
  || bad "another max parallelism: stderr was $(cat run/err)"

finish
