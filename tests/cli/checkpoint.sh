#!/usr/bin/env bash
# Checkpoints (docs/API.md, Checkpoints; the kill -9 loops are tests/ckpt): a stop by signal
# leaves a savepoint a rerun continues from; a finished job says so; damaged checkpoints are
# refused by name and the previous one is used (7(d)); a second writer is kept out. A full disk
# (7(g)) is tests/cli/diskfull.sh.
. "$(dirname "$0")/lib.bash"

# The kill -9 loops are tests/ckpt (ctest -L kill). Here: a run to the end, for what follows.
seq 1 20000 | sed 's/^/line /' > in.txt
seq 1 20000 > small.txt
cat > job.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:read_text_file("in.txt")
  :map(function(l) return l:upper() .. " " .. #l end):uid("upper")
  :write_text("out.txt")
env:execute()
LUA
run_weir run job.lua
expect_rc 0 "uninterrupted run"
mv out.txt want.txt
run_weir run job.lua --checkpoint-dir ck --checkpoint-interval 0
expect_rc 0 "a run with checkpoints after every batch"
cmp -s out.txt want.txt && ok || bad "checkpoints changed the output"

run_weir run job.lua --checkpoint-dir ck
expect_rc 0 "a finished job runs no more"
expect_err_has "job already finished (chk-" "a finished job says so"
cmp -s out.txt want.txt && ok || bad "a finished job left its output alone"
run_weir checkpoint list ck
expect_out_has "final" "list names the final checkpoint"
expect_out_has ", finished" "list says finished"

# --fresh starts over (and needs the file away: write_text never overwrites unasked)
rm out.txt
run_weir run job.lua --checkpoint-dir ck --fresh
expect_rc 0 "--fresh"
cmp -s out.txt want.txt && ok || bad "--fresh output differs"

# SIGTERM: a savepoint at the drain point, exit 0; a rerun continues from it
rm -rf ck out.txt
seq 1 3000000 > big.txt
cat > slow.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:read_text_file("big.txt"):map(function(l) return l .. "!" end):write_text("out.txt")
env:execute()
LUA
# timeout --foreground: a plain timeout passes the TERM on to weir and then to its whole process
# group, so weir would see two signals (the second one exits at once, status 1). The TERM goes
# once weir has written output (its handlers are in place then: a TERM before them kills it,
# status 143), however long a loaded machine takes to get there; the timeouts (120 s for a job
# of seconds) only catch a hang.
timeout --foreground 120 "$WEIR" run slow.lua > /dev/null 2> stop.err &
pid=$!
while kill -0 $pid 2> /dev/null && ! [ -s out.txt ]; do sleep 0.01; done
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 0 ] && ok || bad "SIGTERM without --checkpoint-dir: exit $rc ($(cat stop.err))"
rm -f out.txt
timeout --foreground 120 "$WEIR" run slow.lua --checkpoint-dir ck > /dev/null 2> stop.err &
pid=$!
while kill -0 $pid 2> /dev/null && ! [ -s out.txt ]; do sleep 0.01; done
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 0 ] && ok || bad "SIGTERM savepoint: exit $rc ($(cat stop.err))"
grep -q "stopped with a savepoint: ck/sp-" stop.err && ok || bad "SIGTERM: no savepoint named: $(cat stop.err)"
run_weir run slow.lua --checkpoint-dir ck
expect_rc 0 "continue from the savepoint"
expect_err_has "restored ck/sp-" "the rerun restores the savepoint"
seq 1 3000000 | sed 's/$/!/' | cmp -s - out.txt && ok || bad "savepoint: output differs"

# stdin from a regular file goes back like a file; the crash here is at a known line (kill -9
# from user code: the shell os.execute starts kills its parent, weir)
rm -rf ck out.txt
cat > sj.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:stdin():map(function(l)
  if l == weir.args[1] then os.execute("kill -9 $PPID") end
  return l .. "."
end):write_text("out.txt")
env:execute()
LUA
run_weir run sj.lua --checkpoint-dir ck --checkpoint-interval 0 -- 15000 < small.txt
expect_rc 137 "stdin job killed at line 15000"
run_weir run sj.lua --checkpoint-dir ck -- none < small.txt
expect_rc 0 "stdin job restored"
expect_err_has "stdin continues after line" "stdin from a file is restored at its line"
sed 's/$/./' small.txt | cmp -s - out.txt && ok || bad "stdin restore: output differs"
rm -rf ck out.txt
run_weir run sj.lua --checkpoint-dir ck --checkpoint-interval 0 -- 4000 < <(seq 1 5000)
expect_rc 137 "stdin pipe job killed"
run_weir run sj.lua --checkpoint-dir ck -- none < <(seq 1 5000)
expect_rc 0 "stdin pipe job rerun"
expect_err_has "stdin cannot go back: records it delivered after the checkpoint are lost" \
  "a pipe says it cannot go back"

# damaged checkpoints: refused by name, the previous one used; none valid: exit 1
rm -rf ck out.txt
sed 's/in.txt/small.txt/' job.lua > dmg.lua
run_weir run dmg.lua --checkpoint-dir ck --checkpoint-interval 0
expect_rc 0 "checkpoints for the damage tests"
newest=$(ls -d ck/chk-* | tail -1)
run_weir checkpoint verify "$newest"
expect_rc 0 "verify a valid checkpoint"
expect_out_has "valid" "verify says valid"
cp -r ck ck.bak
truncate -s -5 "$newest/w0.state"
run_weir checkpoint verify "$newest"
expect_rc 1 "verify a truncated state file"
expect_err_has "w0.state:" "a truncated file is named"
expect_err_has "truncated" "a truncated file says so"
rm -rf ck && cp -r ck.bak ck
printf '\x55' | dd of="$newest/w0.state" bs=1 seek=200 conv=notrunc 2>/dev/null
run_weir checkpoint verify "$newest"
expect_rc 1 "verify a bit flip"
expect_err_has "crc mismatch" "a bit flip is a crc mismatch"
expect_err_has "section " "a bit flip names its section"
run_weir run dmg.lua --checkpoint-dir ck
expect_rc 0 "a corrupt newest checkpoint: the previous one is restored"
expect_err_has "is corrupt (w0.state: " "the corrupt checkpoint is named"
expect_err_has "; restoring chk-" "the fallback is named"
rm -rf ck && cp -r ck.bak ck
rm "$newest/MANIFEST"
run_weir checkpoint verify "$newest"
expect_rc 1 "verify a missing MANIFEST"
expect_err_has "MANIFEST: missing" "a missing MANIFEST is named"
for d in ck/chk-*; do rm "$d/w0.state"; done
run_weir run dmg.lua --checkpoint-dir ck
expect_rc 1 "no valid checkpoint"
expect_err_has "no valid checkpoint in ck" "no valid checkpoint: said"
expect_err_has "w0.state: missing" "a missing state file is named"

# a second writer on the same directory is a usage error
rm -rf ck out.txt && mkdir ck
flock -n ck/LOCK -c "timeout 120 '$WEIR' run job.lua --checkpoint-dir ck > out 2> err; echo \$? > rc"
[ "$(cat rc)" = 2 ] && ok || bad "second writer: exit $(cat rc)"
grep -qF "another weir is using it" err && ok || bad "second writer: stderr was $(cat err)"

# a window job checkpoints too (its windows: tests/cli/winckpt.sh); its rerun says finished
cat > win.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:from_elements(1, 2):assign_timestamps_and_watermarks(weir.watermarks.monotonous()
  :with_timestamp_assigner(function(v) return v end))
  :window_all(weir.windows.tumbling_event_time(10)):reduce(function(a, b) return a + b end)
  :print()
env:execute()
LUA
run_weir run win.lua --checkpoint-dir ckw
expect_rc 0 "a window job with --checkpoint-dir"
expect_out "3" "a window job's output"
run_weir run win.lua --checkpoint-dir ckw
expect_rc 0 "a finished window job rerun"
expect_err_has "job already finished" "a finished window job says so"

# usage
run_weir run job.lua --checkpoint-interval 1s
expect_rc 2 "--checkpoint-interval alone"
run_weir run job.lua --checkpoint-dir ck --checkpoint-interval soon
expect_rc 2 "a bad interval"
expect_err_has 'invalid duration "soon"' "a bad interval is named"
run_weir checkpoint verify
expect_rc 2 "verify without PATH"

# a full disk (item 7(g)): tests/cli/diskfull.sh

finish
