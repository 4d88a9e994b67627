#!/usr/bin/env bash
# The REPL steps back (docs/API.md, The REPL: going back): for each job, a session that goes
# back N commands and issues them again prints, after the :undo line, exactly what the same
# commands printed the first time (derived here by running the commands without the :undo); a
# write_text file that went back ends byte-identical to weir run's; :savepoint writes a
# savepoint `weir checkpoint verify` accepts and `weir run --restore` continues to weir run's
# output; one of records typed at the prompt is refused by weir run, naming why, and continued
# by :restore in the REPL; an incompatible :restore is refused and the job goes on as it was.
. "$(dirname "$0")/lib.bash"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export HOME=$TMP

# same_after_undo NAME N PREFIX BLOCK [ARGS...]: PREFIX then BLOCK, :undo N (N = the steps in
# BLOCK), BLOCK again. Its output must be the plain run's (PREFIX, BLOCK) with the :undo line
# and the block's output once more after it.
same_after_undo() {
  local name=$1 n=$2 prefix=$3 block=$4
  shift 4
  printf '%s\nprint("@@1")\n%s\nprint("@@2")\n' "$prefix" "$block" > plain.txt
  printf '%s\n%s\n:undo %s\n%s\n' "$prefix" "$block" "$n" "$block" > undo.txt
  timeout 30 "$WEIR" repl "$@" < plain.txt > plain.out 2> plain.err
  timeout 30 "$WEIR" repl "$@" < undo.txt > undo.out 2> undo.err
  rc=$?
  expect_rc 0 "$name: the session with :undo $n"
  python3 - "$n" <<'PY' && ok || bad "$name: going back and forward again printed something else: $(cat diff.txt)"
import sys
n = sys.argv[1]
plain = open("plain.out").read()
pre, rest = plain.split("@@1\n")
block, _ = rest.split("@@2\n")
got = open("undo.out").read()
want_start = pre + block
ok = got.startswith(want_start)
tail = got[len(want_start):] if ok else ""
first, _, again = tail.partition("\n")
ok = ok and first.startswith("back %s to " % n) and again == block
if not ok:
    open("diff.txt", "w").write("\nwanted %r\n+ back line +\n%r\ngot %r" % (want_start, block, got))
sys.exit(0 if ok else 1)
PY
}

# the manual source, a generator with idleness, a rich function's state, a side output, collect
cp "$ROOT/tests/repl/undo/job.lua" undo_job.lua
same_after_undo "manual job" 4 ':start
:push a,1000
:push b,3000' ':push a,2000
:advance 2s
:push c,9000
:advance 6s
out:values()
:status' undo_job.lua

# :draw --svg after going back and forward draws the same picture (the recorder goes back too:
# here the input that went idle before the :undo)
pre=$(printf '%s\n' ':start' ':push a,1000' ':advance 6s' ':push b,3000')
blk=$(printf '%s\n' ':push a,2000' ':advance 6s' ':push c,9000')
printf '%s\n%s\n:draw --svg plain.svg\n' "$pre" "$blk" > s1.txt
printf '%s\n%s\n:undo 3\n%s\n:draw --svg undo.svg\n' "$pre" "$blk" "$blk" > s2.txt
timeout 30 "$WEIR" repl undo_job.lua < s1.txt > /dev/null 2>&1
timeout 30 "$WEIR" repl undo_job.lua < s2.txt > /dev/null 2>&1
grep -q 'idle' plain.svg && cmp -s plain.svg undo.svg && ok \
  || bad ":draw --svg after :undo and the same commands again draws another picture"

# a paused replay: :step and :advance
cp "$ROOT/tests/repl/undo-replay/job.lua" replay_job.lua
cp "$ROOT/tests/repl/undo-replay/in.replay" in.replay
same_after_undo "replay job" 3 ':start
:step' ':step
:advance 2s
:now
:step
:status' replay_job.lua

# write_text goes back with the job: the file ends as weir run writes it
sed 's/:print()/:write_text("out.txt")/' replay_job.lua > file_job.lua
run_weir run file_job.lua
expect_rc 0 "weir run of the write_text job"
mv out.txt want.txt
printf '%s\n' ':start' ':step' ':step' ':step' ':step' ':undo 3' ':step' ':advance 1s' ':run' > s.txt
run_weir repl file_job.lua < s.txt
expect_rc 0 "a write_text job that went back"
expect_out_has "back 3 to after :step: now 0, watermark -inf (undone: :step, :step, :step)" ":undo names where it went"
cmp -s want.txt out.txt && ok || bad "write_text after :undo differs from weir run's: $(diff want.txt out.txt)"

# :savepoint: verify accepts it, weir run --restore continues it to weir run's output
rm out.txt
printf '%s\n' ':start' ':step' ':step' ':step' ':savepoint ck' > s.txt
run_weir repl file_job.lua < s.txt
expect_rc 0 ":savepoint"
expect_out_has "savepoint ck/sp-00000001: now 2000, watermark 1999; weir run file_job.lua --restore ck/sp-00000001 goes on from it" ":savepoint says where and how to go on"
run_weir checkpoint verify ck/sp-00000001
expect_rc 0 "weir checkpoint verify of a REPL savepoint"
expect_out_has "ck/sp-00000001: valid (savepoint 1," "verify names it valid"
run_weir run file_job.lua --restore ck/sp-00000001
expect_rc 0 "weir run --restore of a REPL savepoint"
expect_err_has "restored ck/sp-00000001: replay in.replay continues at entry 4" "the restore says where it goes on"
cmp -s want.txt out.txt && ok || bad "weir run from the REPL savepoint differs: $(diff want.txt out.txt)"
rm out.txt
printf '%s\n' ':start' ':savepoint ck' > s.txt
run_weir repl file_job.lua < s.txt
expect_out_has "savepoint ck/sp-00000002:" "a second savepoint takes the next id"

# records typed at the prompt: weir run refuses their savepoint, the REPL goes on from it
printf 'x\n' > in.txt
cat > manual_job.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:read_text_file("in.txt")
  :process({ n = 0,
    process = function(self, line, ctx, out) self.n = self.n + 1; out(line .. " #" .. self.n) end,
    snapshot_state = function(self) return self.n end,
    restore_state = function(self, values) self.n = values[1] end })
  :print()
env:execute()
LUA
printf '%s\n' ':start' ':push a' ':push b' ':savepoint typed' > s.txt
run_weir repl manual_job.lua --manual < s.txt
expect_rc 0 ":savepoint of the manual source"
expect_out_has "its records were typed at the prompt: :restore typed/sp-00000001 in weir repl goes on from it, weir run cannot" ":savepoint says weir run cannot continue it"
run_weir run manual_job.lua --restore typed/sp-00000001
expect_rc 2 "weir run --restore of a savepoint of typed records"
expect_err_has "weir: --restore typed/sp-00000001: a REPL savepoint of records typed at the prompt (manual), which no file holds: weir run cannot go on from it; weir repl manual_job.lua --manual and :restore typed/sp-00000001 can" "weir run names why it refuses"
printf '%s\n' ':start' ':push z' ':restore typed/sp-00000001' ':push c' ':undo' ':push c' \
  ':restore ck/sp-00000001' ':push d' ':restore nowhere' > s.txt
run_weir repl manual_job.lua --manual < s.txt
expect_rc 1 "a session with refused restores"
expect_out "loaded manual_job.lua: job \"weir job\" is ready (:start runs it, :help for more)
started \"weir job\" on the virtual clock at 0
z #1
restored typed/sp-00000001 (manual continues at record 2): now 0, watermark -inf
c #3
back 1 to after :restore typed/sp-00000001: now 0, watermark -inf (undone: :push c)
c #3
the job goes on as it was
d #4" ":restore PATH goes on from the savepoint, and :undo takes it back"
expect_err_has "weir: cannot restore ck/sp-00000001: it holds state of operator source-replay-1 (replay in.replay), which the job no longer has" "an incompatible :restore names the operator"
expect_err_has "weir: nowhere: not a valid checkpoint: MANIFEST: missing" "a missing checkpoint is named"

# memory is bounded: the last 64 steps are kept, and going back further says so
{ echo ':start'; seq 1 70 | sed 's/^/:push /'; echo ':undo 64'; echo ':undo 63'; } > s.txt
run_weir repl manual_job.lua --manual < s.txt
expect_rc 1 "a session going back beyond the steps kept"
expect_out_has "cannot go back 64: the steps kept go back 63, to after :push 7 (older steps were let go: the last 64 are kept, within 64 MiB)" ":undo beyond the oldest step says so"
expect_out_has "back 63 to after :push 7: now 0, watermark -inf (undone: :push 8, :push 9, :push 10, :push 11, :push 12, and 58 more)" ":undo to the oldest step kept"

finish
