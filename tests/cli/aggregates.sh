#!/usr/bin/env bash
# Built-in aggregates (docs/API.md, Windows: Built-in aggregates) in checkpoints: a replay job
# counting, summing, averaging and taking the max of typed records' fields in tumbling windows
# (in C on the fast operator) with allowed lateness, at parallelism 2. --verify-checkpoints (a
# round trip of the whole state after every batch) prints what the plain run prints; a run with
# checkpoints restored from each one it kept ends with the uninterrupted run's files (rescaling:
# tests/lua/winckpt_spec.lua); a bad field fails naming the field and the record.
. "$(dirname "$0")/lib.bash"

cat > job.lua <<'LUA'
local weir = require("weir")
local A = weir.aggregates
local ev = weir.record_type("ev", { "int32_t key", "double ts", "double price" })
local env = weir.env{ parallelism = weir.param("p", 2) }
local keyed = env:replay("in.replay")
  :map(function(l)
    local k, t, p = l:match("^(%d+),(%d+),(%S+)$")
    return ev(tonumber(k), tonumber(t), tonumber(p))
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(2000)
    :with_timestamp_assigner(function(r) return r.ts end))
  :key_by(function(r) return r.key end)
local function tumbling(agg, name)
  keyed:window(weir.windows.tumbling_event_time(5000)):allowed_lateness(1500)
    :aggregate(agg):uid(name)
    :map(function(r) return ("%s %d [%d,%d) %.17g"):format(name, r.key, r.start, r.stop, r.value) end)
    :write_text(name .. ".txt")
end
tumbling(A.count(), "count")
tumbling(A.sum("price"), "sum")
tumbling(A.avg("price"), "avg")
tumbling(A.max("price"), "max")
env:execute()
LUA
# 300 records over about 60 s of virtual time, 9 keys, up to 2.5 s out of order (some late)
awk 'BEGIN{srand(11); t=0; for(i=0;i<300;i++){ t+=int(rand()*400); d=t-int(rand()*2500); if(d<0)d=0; printf "+%dms %d,%d,%.3f\n", int(rand()*300), int(rand()*9), d, rand()*100-20}}' > in.replay

sums() { for f in count.txt/* sum.txt/* avg.txt/* max.txt/*; do echo "$f"; sort "$f"; done | md5sum; }
lines() { cat count.txt/* | wc -l; }

run_weir run job.lua --replay in.replay
expect_rc 0 "uninterrupted run"
sums > want
[ "$(lines)" -gt 50 ] && ok || bad "the job writes little: $(lines) windows"

rm -rf count.txt sum.txt avg.txt max.txt
run_weir run job.lua --replay in.replay --verify-checkpoints
expect_rc 0 "--verify-checkpoints"
sums | diff -q - want >/dev/null && ok || bad "the round trip changed the output"

rm -rf count.txt sum.txt avg.txt max.txt
run_weir run job.lua --replay in.replay --checkpoint-dir ck --checkpoint-interval 10s
expect_rc 0 "a run with checkpoints every 10 s of virtual time"
sums | diff -q - want >/dev/null && ok || bad "checkpoints changed the output"
kept=$(cd ck && ls -d chk-* | head -n -1)
[ "$(echo "$kept" | wc -w)" -ge 2 ] && ok || bad "expected 2 checkpoints before the final: $kept"
for c in $kept; do
  run_weir run job.lua --replay in.replay --restore "ck/$c"
  expect_rc 0 "restore $c"
  sums | diff -q - want >/dev/null && ok || bad "restored from $c, the output differs"
done

# a field that is not a finite number fails the job, naming the aggregate, the field and the record
printf '+1ms 1,10,3\n+1ms 2,20,nan\n' > bad.replay
rm -rf count.txt sum.txt avg.txt max.txt
run_weir run job.lua --replay bad.replay --param p=1
expect_rc 1 "a NaN price"
expect_err_has 'weir.aggregates.sum("price"): field price of the record ev{key=2, ts=20, price=nan} is nan; built-in aggregates take finite numbers' "the error names it"

finish
