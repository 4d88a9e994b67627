#!/usr/bin/env bash
# Window state in checkpoints (docs/API.md, Checkpoints, Windows): a replay job with a tumbling
# window with allowed lateness (the fast operator), a sliced sliding window, event-time
# sessions and processing-time windows (the general operator), at parallelism 2, writing with
# write_text; restored from each checkpoint it kept before the end, it ends with files
# byte-identical to the uninterrupted run's. `weir checkpoint inspect` counts each window
# operator's windows and timers; a restore into windows of another size is refused by name.
. "$(dirname "$0")/lib.bash"

cat > job.lua <<'LUA'
local weir = require("weir")
local W = weir.windows
local size = weir.param("size", 5000)
local env = weir.env{ parallelism = 2 }
local s = env:replay("in.replay")
  :map(function(l) local k, t = l:match("^(%w+),(%d+)$"); return { k = k, t = tonumber(t) } end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(2000)
    :with_timestamp_assigner(function(r) return r.t end))
local keyed = s:key_by(function(r) return r.k end)
local count = { create = function() return 0 end, add = function(_, a) return a + 1 end,
                result = function(a) return a end, merge = function(a, b) return a + b end }
local function show(name)
  return function(k, ctx, els, out)
    local w = ctx:window()
    out(("%s %s [%d,%d) %s"):format(name, k, w.start, w.stop, table.concat(els, " ")))
  end
end
keyed:window(W.tumbling_event_time(tonumber(size))):allowed_lateness(3000)
  :aggregate(count, show("tumble")):uid("tumble"):write_text("tumble.txt")
keyed:window(W.sliding_event_time(6000, 2000)):aggregate(count, show("slide")):uid("slide")
  :write_text("slide.txt")
keyed:window(W.event_time_session(3000)):process(function(k, ctx, els, out)
    local w = ctx:window()
    out(("session %s [%d,%d) %d"):format(k, w.start, w.stop, #els))
  end):uid("session"):write_text("session.txt")
keyed:window(W.tumbling_processing_time(7000)):process(function(k, ctx, els, out)
    local w = ctx:window()
    out(("ptime %s [%d,%d) %d"):format(k, w.start, w.stop, #els))
  end):uid("ptime"):write_text("ptime.txt")
env:execute()
LUA
# 400 records over about 100 s of virtual time, 7 keys, up to 2.5 s out of order (some late)
awk 'BEGIN{srand(7); t=0; for(i=0;i<400;i++){ t+=int(rand()*600); k=substr("abcdefg", int(rand()*7)+1, 1); d=t-int(rand()*2500); if(d<0)d=0; printf "+%dms %s,%d\n", int(rand()*500), k, d}}' > in.replay

sums() { for f in tumble.txt/* slide.txt/* session.txt/* ptime.txt/*; do echo "$f $(wc -l < "$f") $(md5sum < "$f")"; done; }

run_weir run job.lua --replay in.replay
expect_rc 0 "uninterrupted run"
sums > want
[ "$(awk '{n += $2} END {print n}' want)" -gt 500 ] && ok || bad "the job writes little: $(cat want)"

rm -rf tumble.txt slide.txt session.txt ptime.txt
run_weir run job.lua --replay in.replay --checkpoint-dir ck --checkpoint-interval 10s
expect_rc 0 "a run with checkpoints every 10 s of virtual time"
sums | diff -q - want >/dev/null && ok || bad "checkpoints changed the output"

kept=$(cd ck && ls -d chk-* | head -n -1)
[ "$(echo "$kept" | wc -w)" -ge 2 ] && ok || bad "expected 2 checkpoints before the final: $kept"
for c in $kept; do
  run_weir run job.lua --replay in.replay --restore "ck/$c"
  expect_rc 0 "restore $c"
  expect_err_has "restored ck/$c: replay in.replay continues at entry" "restore $c says so"
  sums | diff - want >/dev/null && ok || bad "restored from $c, the files differ: $(sums | diff - want)"
done

c=$(echo "$kept" | head -1)
run_weir checkpoint inspect "ck/$c"
expect_rc 0 "inspect"
for op in tumble slide session ptime; do
  grep -A1 "\[$op\]: window" "$TMP/out" | grep -qE '^    [0-9]+ (windows|slices), [0-9]+ timers, in [0-9]+ key groups \([0-9]+\.\.[0-9]+\)$' \
    && ok || bad "inspect: no window line for $op: $(cat "$TMP/out")"
done
grep -A1 "\[slide\]: window" "$TMP/out" | grep -q slices && ok || bad "inspect: sliced windows count slices"

# windows of another size are refused, naming the operator and the key group
run_weir run job.lua --replay in.replay --restore "ck/$c" --param size=4000
expect_rc 1 "a restore into windows of another size"
expect_err_has "window tumbling_event_time aggregate (job.lua:19): cannot restore key group" \
  "the refusal names the operator"
expect_err_has "windows are 5000 long every 5000, this job's 4000 every 4000" "and says why"

# records of a weir.record_type and weir.json.null in window contents come back as themselves:
# --verify-checkpoints (a round trip after every event) prints what the plain run prints
cat > rec.lua <<'LUA'
local weir = require("weir")
local ev = weir.record_type("ev", { "int32_t key", "double ts", "string[8] tag" })
local env = weir.env{ parallelism = 2 }
env:from_collection({ 1, 2, 3, 11, 12, 13, 25 })
  :map(function(i) return { ev{ key = i % 2, ts = i, tag = "t" .. i }, weir.json.null } end)
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(p) return p[1].ts end))
  :key_by(function(p) return p[1].key end)
  :window(weir.windows.sliding_event_time(10, 5))
  :process(function(k, ctx, els, out)
    local t = {}
    for _, p in ipairs(els) do
      t[#t + 1] = p[1].tag .. (p[2] == weir.json.null and "/null" or "/lost")
    end
    out(("%d %s %s"):format(k, tostring(ctx:window()), table.concat(t, ",")))
  end):print()
env:execute()
LUA
run_weir run rec.lua
expect_rc 0 "records in windows"
sort "$TMP/out" > rec.want
grep -q "t1/null,t3/null" rec.want && ok || bad "the job's own output: $(cat rec.want)"
run_weir run rec.lua --verify-checkpoints
expect_rc 0 "records in windows, round trip"
sort "$TMP/out" | diff - rec.want >/dev/null && ok || bad "records in windows: the round trip changed the output: $(cat "$TMP/out")"

# the same in keyed state (a value_state holding a record, another weir.json.null)
cat > krec.lua <<'LUA'
local weir = require("weir")
local P = weir.record_type("P", { "string k", "double n" })
local env = weir.env()
env:from_collection({ { "a", 1 }, { "b", 2 }, { "a", 3 }, { "b", 4 }, { "a", 5 } })
  :key_by(function(v) return v[1] end)
  :process({
    open = function(self, rt)
      self.last, self.null = rt:value_state("last"), rt:value_state("null")
    end,
    process = function(self, v, _, out)
      local p = self.last:value()
      out(("%s prev=%s null=%s"):format(v[1], p and (p.k .. p.n) or "-",
        tostring(self.null:value() == weir.json.null)))
      self.last:update(P{ k = v[1], n = v[2] })
      self.null:update(weir.json.null)
    end,
  }):print()
env:execute()
LUA
run_weir run krec.lua
expect_rc 0 "records in keyed state"
cp "$TMP/out" krec.want
grep -q "a prev=a3 null=true" krec.want && ok || bad "the keyed job's own output: $(cat krec.want)"
run_weir run krec.lua --verify-checkpoints
expect_rc 0 "records in keyed state, round trip"
diff "$TMP/out" krec.want >/dev/null && ok || bad "records in keyed state: the round trip changed the output: $(cat "$TMP/out")"

finish
