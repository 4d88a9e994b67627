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

# The README's REPL walkthrough pasted verbatim (its "> " and ">> " lines, `--` comments and
# all) runs without an error and prints exactly the lines the README shows.
awk '/^## The REPL/{f=1} f&&/^```/{n++; next} f&&n==1' "$ROOT/README.md" > block.txt
grep -E '^>>? ' block.txt | sed -E 's/^>>? //' > readme_session.txt
grep -vE '^>>? ' block.txt > readme_out.txt
[ -s readme_session.txt ] && ok || bad "no REPL walkthrough found in README.md"
run_weir repl < readme_session.txt
expect_rc 0 "the README walkthrough pasted verbatim"
diff -u readme_out.txt out >/dev/null && ok || bad "the README walkthrough prints otherwise:
$(diff -u readme_out.txt out)"

# A replay stepped line by line (:step) prints exactly the golden lines of weir run --replay.
{ echo ':start'; for _ in $(seq 1 8); do echo ':step'; done; } > steps.txt
run_weir repl "$ROOT/examples/idleness/job.lua" --replay "$ROOT/examples/idleness/input.replay" < steps.txt
expect_rc 0 "a replay stepped to its end"
grep -v -E "^(line [0-9]+ of |started |loaded |replay .* is paused|the job's input has ended)" out > job_lines
diff -u "$ROOT/examples/idleness/expected.out" job_lines >/dev/null && ok || bad "stepping through the idleness replay differs from its golden output:
$(diff -u "$ROOT/examples/idleness/expected.out" job_lines)"

# Ctrl-D with an open processing-time window says what it drops (and how to fire it).
cat > ptime.lua <<'EOF2'
local weir = require("weir")
local env = weir.env()
env:manual():key_by(function(v) return v end)
  :window(weir.windows.tumbling_processing_time("10s"))
  :process(function(key, ctx, els, out) out(key .. " " .. #els) end)
  :print()
env:execute("ptime")
EOF2
printf '%s\n' ':start' ':push a' '^D' > ptime.txt
timeout 60 "$BUILD/pty_run" ptime.txt -- "$WEIR" repl ptime.lua > out 2> err
rc=$?
expect_rc 0 "Ctrl-D with an open processing-time window"
expect_out_has 'leaving: job "ptime" stops with 1 open window(s), which do not fire (:end before leaving fires them)' \
  "Ctrl-D says the open window is dropped"
expect_out_has "stopped with 1 pending window(s) holding 1 element(s); dropped" \
  "Ctrl-D names the window operator's dropped window"

# An error in user code fails the job in the REPL too: named with its record, the job is
# kept for the inspectors, later pushes are refused, and the piped session exits 1.
cat > fails.lua <<'EOF2'
local weir = require("weir")
local env = weir.env()
env:manual():map(function(v) if v == "bad" then error("bad record") end return v end):print()
env:execute("fails")
EOF2
printf '%s\n' ':start' ':push ok' ':push bad' ':push later' ':status' > fails.txt
run_weir repl fails.lua < fails.txt
expect_rc 1 "a session whose job failed"
expect_err_has "map (fails.lua:3), subtask 1/1: fails.lua:3: bad record" "the failure names the operator"
expect_err_has 'record: "bad"' "the failure names the record"
expect_out_has "the job failed (:start runs it again)" "a push after the failure is refused"
expect_out_has "(the job failed; its state at the end:)" ":status shows the failed job"
expect_out_has "2 records in, 1 out" ":status counts up to the failure"

# After the replay's end every inspector works on the final state.
printf '%s\n' ':start' ':run' ':windows' ':why' ':timers' ':status' ':draw' ':late' > ended.txt
run_weir repl "$ROOT/examples/idleness/job.lua" --replay "$ROOT/examples/idleness/input.replay" < ended.txt
expect_rc 0 "the inspectors after a replay's end"
[ "$(grep -c '^(the job has ended; its state at the end:)$' out)" = 5 ] && ok \
  || bad "not every inspector shows the ended job: $(cat out)"
grep -q 'no job is running' out && bad "an inspector says no job is running after the end" || ok
expect_out_has "came when the watermark was 14999" ":late after the end"

# Ctrl-C stops job code stuck in a loop (the map runs interpreted: the JIT is off in the
# REPL), and a loop in a function defined at the prompt; the job stays inspectable.
cat > slow.lua <<'EOF2'
local weir = require("weir")
local env = weir.env()
env:manual()
  :map(function(v)
    if v == "slow" then print("spinning") io.stdout:flush() while true do end end
    return v
  end)
  :print()
env:execute("slow")
EOF2
printf '%s\n' ':start' ':push a' ':push slow' '^C!spinning' ':status' ':push b' \
  'function spin() print("twirling") io.stdout:flush() local i = 0 while true do i = i + 1 end end' \
  'spin()' '^C!twirling' '6 * 7' '^D' > ctrlc.txt
timeout 60 "$BUILD/pty_run" ctrlc.txt -- "$WEIR" repl slow.lua > out 2> err
rc=$?
expect_rc 0 "Ctrl-C in the job's code at a terminal"
expect_out_has "interrupted while map (slow.lua:4) was running: the job is stopped, its state is kept" \
  "Ctrl-C names the operator whose code it stopped"
expect_out_has "(the job was interrupted; its state at the end:)" ":status shows the interrupted job"
expect_out_has "2 records in, 1 out" ":status counts what the job did before Ctrl-C"
expect_out_has "the job was interrupted (:start runs it again)" ":push after the interrupt says why not"
expect_out_has "stdin:1: interrupted" "Ctrl-C stops a loop in a function defined at the prompt"
expect_out_has "42" "the REPL goes on after both interrupts"

# A live job's code stuck between keystrokes (the real clock; no command runs) is stopped by
# Ctrl-C too, once it keeps running after the Ctrl-C (a short batch would let it go to the
# prompt instead, as a dropped line).
cat > background.lua <<'EOF2'
local weir = require("weir")
local env = weir.env()
env:generate(function(i)
  if i == 3 then print("spinning") io.stdout:flush() while true do end end
  return i
end, { rate = 100, count = 10 }):print()
env:execute("background")
EOF2
printf '%s\n' ':start' '^C!spinning' ':status' '^D' > background.txt
timeout 60 "$BUILD/pty_run" background.txt -- "$WEIR" repl background.lua > out 2> err
rc=$?
expect_rc 0 "Ctrl-C in a live job's code"
expect_out_has "interrupted while generate (count 10, rate 100/s) was running" \
  "Ctrl-C stops a live job's stuck code"
expect_out_has "records in, 3 out" ":status after the interrupt"

# SIGTERM ends the REPL: while job code is stuck (exit 1: the job could not drain) ...
printf '%s\n' ':start' ':push slow' '^T!spinning' > term.txt
timeout 60 "$BUILD/pty_run" term.txt -- "$WEIR" repl slow.lua > out 2> err
rc=$?
expect_rc 1 "SIGTERM while the job's code is stuck"
expect_out_has "terminated by a signal while map (slow.lua:4) was running" "SIGTERM names the operator"
# ... and at the prompt, through a pipe, where the stop drains the job (exit 0)
mkfifo term_in term_out
"$WEIR" repl slow.lua < term_in > term_out 2> err &
pid=$!
exec 3> term_in 4< term_out
printf ':start\n:push a\n' >&3
: > out
while read -r line <&4; do # until the job has printed the record: it is running
  echo "$line" >> out
  [ "$line" = a ] && break
done
kill -TERM "$pid"
cat <&4 >> out
wait "$pid"
rc=$?
exec 3>&- 4<&-
expect_rc 0 "SIGTERM at the prompt ends the session"
expect_out_has "stopped by a signal: the job stops, the session ends" "SIGTERM at the prompt stops the job"

# Completion: stream methods after a stream-valued name and after a call; the lists of
# weir.windows. and env: (Tab twice, on a comment line) hold no internals.
printf '%s\n' 's = env:from_elements(1, 2)' \
  "$(printf 's:ma\t(function(v) return v end) ~= nil')" \
  "$(printf 'env:from_elements(3):filt\t(function() return true end) ~= nil')" \
  "$(printf -- '-- weir.windows.\t\t')" "$(printf -- '-- env:\t\t')" \
  "$(printf ':und\t')" "$(printf ':chec\t')" '^D' > complete.txt
timeout 60 "$BUILD/pty_run" complete.txt -- "$WEIR" repl > out 2> err
rc=$?
expect_rc 0 "completion at a terminal"
[ "$(grep -c '^true' out)" = 2 ] && ok || bad "s:ma<TAB> and env:from_elements(3):filt<TAB> complete stream methods: $(cat out)"
expect_out_has "weir.windows.tumbling_event_time" "weir.windows.<TAB><TAB> lists the assigners"
expect_out_has "env:from_elements" "env:<TAB><TAB> lists env's methods"
grep -q 'is_assigner\|window_start\|add_node\|__index' out && bad "completion offers internals: $(cat out)" || ok
expect_out_has "nothing to go back to: :start a job first" ":und<TAB> completes :undo"
expect_out_has "no job is running (:start; :undo goes back into one that ended)" ":chec<TAB> completes :checkpoint"

# --manual: the socket job's text source becomes :push, and no socket is opened
printf '%s\n' ':start' ':push a,5' ':push oops' ':push a,10' > manual.txt
run_weir repl "$ROOT/examples/socket-keyed/job.lua" --manual < manual.txt
expect_rc 0 "weir repl --manual"
expect_out_has "2> (a,5)" "a pushed record runs through the socket job"
expect_out_has "2> (a,15)" "state carries over between pushes"
expect_err_has 'skipped "oops"' "the job's error side output still works"

finish
