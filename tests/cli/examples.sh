#!/usr/bin/env bash
# The socket examples teach the on_error habit: a line that does not parse (a typo in nc) goes
# to the error side output, is reported on stderr, and the job goes on with the same output.
# And the allowed-lateness example behaves live at -p 1 as its header says.
. "$(dirname "$0")/lib.bash"
EX=$(cd "$(dirname "$0")/../../examples" && pwd)

for name in allowed-lateness early-firing idleness keep-last quiet-source sessions socket-keyed \
  orders-payments; do
  dir="$EX/$name"
  { cat "$dir/input.replay"; echo; echo "oops typo"; } > "$name.replay"
  (cd "$dir" && timeout 30 "$WEIR" run job.lua --replay "$TMP/$name.replay" \
    >"$TMP/out" 2>"$TMP/err")
  rc=$?
  expect_rc 0 "$name with a typo"
  expect_err_has 'skipped "oops typo": job.lua:' "$name reports the line that did not parse"
  expect_out "$(cat "$dir/expected.out")" "$name: the output is the same"
done

# allowed-lateness typed live as README's walkthrough does, at -p 1: fires, a late re-fire,
# and the last line dropped as late (named)
printf 'a,1718157600000\n+1s a,1718157602000\n+1s a,1718157605001\n+1s a,1718157604000\n+1s a,1718157609000\n+1s a,1718157603000\n+1s\n' > walk.replay
run_weir run "$EX/allowed-lateness/job.lua" -p 1 --replay walk.replay
expect_rc 0 "allowed-lateness -p 1"
expect_out "1718157600000-1718157605000
a
a
1718157600000-1718157605000
a
a
a
1718157605000-1718157610000
a
a" "at -p 1 each typed line moves the watermark"
expect_err_has '1 late record(s) dropped (no side_output_late_data); the first: (a,1718157603000)' \
  "the dropped late line is named"
# the same lines at the job's parallelism 2: nothing fires before the input ends, as its
# header says (the lower of two generators' watermarks)
printf 'a,1718157600000\n+1s a,1718157602000\n+1s a,1718157605001\n+1s a,1718157604000\n+1s a,1718157609000\n+1s a,1718157603000\n' > walk2.replay
run_weir run "$EX/allowed-lateness/job.lua" --replay walk2.replay
expect_rc 0 "allowed-lateness -p 2"
[ "$(grep -c -- '-1718' "$TMP/out")" = 2 ] && ok || bad "at p 2 only the two end-of-input fires: $(cat "$TMP/out")"

finish
