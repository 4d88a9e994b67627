#!/usr/bin/env bash
# The REPL as a newcomer uses it: the seed-001 experiment typed at the prompt prints exactly
# the golden scenario's lines; in the seed-000 situation :why names the input channel that
# holds the watermark back; and the same REPL on a real pseudo-terminal (line editing, tab
# completion, Ctrl-D) runs a job.
. "$(dirname "$0")/lib.bash"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export HOME=$TMP

# seed 001 through a pipe: the job's lines equal the golden scenario's output
run_weir repl < "$ROOT/tests/repl/seed001/session.txt"
expect_rc 0 "the seed-001 session"
grep -v -E "^(now |started |job |the job's input has ended)" out > job_lines
if diff -u "$ROOT/tests/scenarios/seed001-lateness-event-time/expected.out" job_lines >/dev/null
then ok; else bad "seed 001 typed at the prompt differs from the golden scenario:
$(diff -u "$ROOT/tests/scenarios/seed001-lateness-event-time/expected.out" job_lines)"; fi

# seed 000: why is the watermark stuck at 14999?
run_weir repl < "$ROOT/tests/repl/seed000/session.txt"
expect_rc 0 "the seed-000 session"
expect_out_has "key a window [10000, 20000) waits for the watermark to reach 19999; it is 14999, held back by input 1 from assign_timestamps_and_watermarks (stdin:7) subtask 2/2 at 14999" ":why names the channel holding the watermark"
expect_out_has "2> (a,10)" "once that input goes idle the windows fire"

# a real terminal: prompt, tab completion, a job, Ctrl-D
cp "$ROOT/tests/repl/windows/job.lua" job.lua
printf '%s\n' ':start' ':push a,1000' ':push a,12000' ':advance 1s' \
  "$(printf 'x = weir.windows.tumbling_ev\t')" 'x ~= nil' 'print("loop" .. "ing") for i = 1, 1e15 do end' '^C!looping' \
  '6 * 7' '^D' > typed.txt
timeout 60 "$BUILD/pty_run" typed.txt -- "$WEIR" repl job.lua > out 2> err
rc=$?
expect_rc 0 "the REPL on a pseudo-terminal"
expect_out_has "(a,[0, 10000),1)" "the job ran at the terminal"
expect_out_has "true" "tab completion completed weir.windows.tumbling_event_time"
grep -qF 'x\040~=\040nil' "$HOME/.weir_history" && ok || bad "the history file keeps typed lines"
[ "$(stat -c %a "$HOME/.weir_history")" = 600 ] && ok || bad "the history file has mode 0600"
ls -A "$HOME" | grep -q 'weir_history\.' && bad "a temporary history file was left behind" || ok
grep -q "interrupted" out && ok || bad "Ctrl-C interrupts a running command"
expect_out_has "42" "the REPL goes on after the interrupt"

# The history file is never written through a symbolic link: its target stays as it was.
mkdir linkhome && printf 'keep\n' > victim && chmod 644 victim
ln -s "$TMP/victim" linkhome/.weir_history
printf '%s\n' '20 + 22' '^D' > two.txt
HOME=$TMP/linkhome timeout 60 "$BUILD/pty_run" two.txt -- "$WEIR" repl > out 2> err
rc=$?
expect_rc 0 "the REPL with a symbolic link as history file"
expect_out_has "42" "the REPL works without a history file"
expect_out_has "weir: repl: history file $TMP/linkhome/.weir_history is a symbolic link: history is not saved" \
  "the REPL says why it saves no history"
[ "$(cat victim)" = keep ] && [ "$(stat -c %a victim)" = 644 ] && [ -L linkhome/.weir_history ] \
  && ok || bad "the history file's link target was changed: $(stat -c %a victim) $(cat victim)"

# Without HOME there is no history file, and none in the working directory.
mkdir nohome
(cd nohome && env -u HOME timeout 60 "$BUILD/pty_run" "$TMP/two.txt" -- "$WEIR" repl) > out 2> err
rc=$?
expect_rc 0 "the REPL with HOME unset"
expect_out_has "42" "the REPL works with HOME unset"
[ -z "$(ls -A nohome)" ] && ok || bad "with HOME unset the REPL wrote $(ls -A nohome) in the working directory"

# --manual: the socket job's text source becomes :push, and no socket is opened
printf '%s\n' ':start' ':push a,5' ':push oops' ':push a,10' > manual.txt
run_weir repl "$ROOT/examples/socket-keyed/job.lua" --manual < manual.txt
expect_rc 0 "weir repl --manual"
expect_out_has "2> (a,5)" "a pushed record runs through the socket job"
expect_out_has "2> (a,15)" "state carries over between pushes"
expect_err_has 'skipped "oops"' "the job's error side output still works"

finish
