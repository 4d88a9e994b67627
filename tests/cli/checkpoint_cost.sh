#!/usr/bin/env bash
# What checkpoints cost, as env:metrics().checkpoints tells it (docs/API.md, Checkpoints):
# checkpoints taken, the last one's bytes, its pause and the longest, the restore's time and
# what was restored; periodic checkpoints are written by a writer process forked from the job,
# so state a checkpoint cannot keep found there still fails the job, naming it; a job stopped
# by a signal while its writer works takes its savepoint once (the writer ignores the job's
# signals) and a rerun restores it.
. "$(dirname "$0")/lib.bash"

cat > job.lua <<'LUA'
local ffi = require("ffi")
local weir = require("weir")
ffi.cdef [[ int kill(int pid, int sig); int getpid(void); ]]
local count, stop_at = tonumber(weir.args[1]), tonumber(weir.args[2] or "-1")
local bad = weir.args[3] == "bad"
local env = weir.env{ parallelism = 1 }
env:generate(function(i)
    if i == stop_at then ffi.C.kill(ffi.C.getpid(), 15) end -- SIGTERM: a stop with a savepoint
    return { i % 50, i, f = bad and print or nil }
  end, { count = count })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time(1000000))
  :process(function(k, _, els, out) out(("%d %d"):format(k, #els)) end)
  :write_text("out.txt", { overwrite = true })
env:execute()
local c = env:metrics().checkpoints
if not c then
  io.stderr:write("metrics: no checkpoints\n")
  return
end
io.stderr:write(("metrics: taken %d failed %d bytes %s pause %s max %s restored %s restore %s\n")
  :format(c.taken, c.failed, tostring(c.last_bytes > 0), tostring(c.last_pause_ms >= 0),
    tostring(c.max_pause_ms >= c.last_pause_ms and c.total_pause_ms >= c.max_pause_ms),
    tostring(c.restored_from), tostring(c.restore_ms > 0)))
io.stderr:write(("metrics: writer cpu %s\n"):format(tostring(c.taken == 0
  or (c.total_writer_cpu_ms > 0 and c.total_writer_cpu_ms >= c.last_writer_cpu_ms
    and c.total_writer_faults > 0 and c.total_writer_faults >= c.last_writer_faults))))
io.stderr:write(("metrics: pause cpu %s\n"):format(tostring(c.taken == 0
  or (c.total_pause_cpu_ms > 0 and c.total_pause_cpu_ms >= c.last_pause_cpu_ms
    and c.last_pause_cpu_ms >= 0))))
LUA

# the uninterrupted run, for the restored one's file
run_weir run job.lua -- 200000
expect_rc 0 "the job without checkpoints"
expect_err_has "metrics: no checkpoints" "no checkpoint figures without --checkpoint-dir"
sort out.txt > want.txt
[ "$(wc -l < want.txt)" = 50 ] && ok || bad "the job fires 50 windows"

# every batch: one checkpoint each, all taken, the figures there
run_weir run job.lua --checkpoint-dir ck --checkpoint-interval 0 -- 20000
expect_rc 0 "checkpoints after every batch"
expect_err_has "failed 0 bytes true pause true max true restored false restore false" \
  "env:metrics().checkpoints: bytes, pauses, nothing restored"
expect_err_has "metrics: writer cpu true" "the writer processes' CPU time counted"
expect_err_has "metrics: pause cpu true" "the pauses' CPU time counted"
taken=$(sed -n 's/^metrics: taken \([0-9]*\) .*/\1/p' "$TMP/err")
last=$(ls -d ck/chk-* | tail -1)
[ "${taken:-0}" -gt 2 ] && [ "$last" = "ck/chk-$(printf %08d "$taken")" ] && ok \
  || bad "taken ($taken) counts every checkpoint, the last being $last"
run_weir checkpoint verify "$last"
expect_rc 0 "the last checkpoint a writer process wrote is valid"

# a stop by signal: the savepoint, then a rerun restores it, with the restore's time
rm -rf ck
run_weir run job.lua --checkpoint-dir ck --checkpoint-interval 1ms -- 200000 100000
expect_rc 0 "a stop by SIGTERM"
expect_err_has "stopped with a savepoint" "the stop took its savepoint"
n=$(grep -c "stopped with a savepoint" "$TMP/err")
[ "$n" = 1 ] && ok || bad "one savepoint for one signal (got $n)"
sp=$(ls -d ck/sp-*)
run_weir run job.lua --checkpoint-dir ck -- 200000
expect_rc 0 "the rerun"
expect_err_has "restored $sp restore true" "env:metrics().checkpoints: what was restored, its time"
sort out.txt > got.txt
cmp -s want.txt got.txt && ok || bad "the restored run's file is the uninterrupted run's"

# state a checkpoint cannot keep, found by the writer process: the job fails, naming it
rm -rf ck
run_weir run job.lua --checkpoint-dir ck --checkpoint-interval 0 -- 20000 -1 bad
expect_rc 1 "a function in a window's contents"
expect_err_has "checkpoint 2: section window/window-1/state" "the checkpoint and section named"
expect_err_has ".f is a function" "the value's path named"

finish
