#!/usr/bin/env bash
# Job parameters (--param, weir.param) and weir sweep, the what-if table, on the allowed-lateness
# example and its replay: the table against a golden, and every usage error naming its cause.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/lib.bash"
# a frozen copy of examples/allowed-lateness (the goldens name its lines)
cp "$ROOT/tests/cli/sweep/job.lua" "$ROOT/tests/cli/sweep/input.replay" .

# --param reaches weir.param: the default (3 s) re-fires the late records; 0 drops them
run_weir run job.lua --replay input.replay
expect_rc 0 "run with the defaults"
cp "$TMP/out" default.out
[ "$(grep -c '^1718157600000-1718157605000' default.out)" = 6 ] && ok || bad "3 s lateness: 6 fires of the first window"
run_weir run job.lua --replay input.replay --param allowed_lateness=0
expect_rc 0 "run --param allowed_lateness=0"
[ "$(grep -c '^1718157600000-1718157605000' "$TMP/out")" = 3 ] && ok || bad "lateness 0: 3 fires of the first window"
expect_err_has "3 late record(s) dropped" "lateness 0 drops the late records"
run_weir run job.lua --replay input.replay --param=allowed_lateness=3s
expect_rc 0 "--param=NAME=VALUE"
cmp -s "$TMP/out" default.out && ok || bad "--param allowed_lateness=3s is the default's output"

# a parameter the job never reads, a malformed one, a value that does not fit
run_weir run job.lua --replay input.replay --param allowed_latness=0
expect_rc 2 "a misspelt --param"
expect_err_has "weir: --param allowed_latness=0: the job never reads it with weir.param (it reads: allowed_lateness, out_of_orderness)" "the unread parameter is named, with what the job reads"
[ ! -s "$TMP/out" ] && ok || bad "a misspelt --param stops the job before it runs"
run_weir run job.lua --param lateness
expect_rc 2 "--param without ="
expect_err_has "--param needs NAME=VALUE (e.g. out_of_orderness=2s), got lateness" "--param without = is named"
run_weir run job.lua --param
expect_rc 2 "--param without its value"
expect_err_has "got nothing" "--param without its value"
run_weir run job.lua --param 2x=1
expect_rc 2 "--param with a bad name"
run_weir run job.lua --replay input.replay --param out_of_orderness=soon
expect_rc 1 "a value that is not a duration"
expect_err_has "job.lua:26: weir.param(\"out_of_orderness\"): --param out_of_orderness=soon is not a number or a duration (the default is the number 0)" "the bad value is named with the script line"
run_weir run job.lua --replay input.replay --param allowed_lateness=1s --param allowed_lateness=2s
expect_rc 2 "a parameter given twice"
expect_err_has "allowed_lateness is given twice" "a parameter given twice is named"
run_weir explain job.lua --param allowed_lateness=1s
expect_rc 0 "explain takes --param"

# the REPL: an unread parameter is a warning (weir.param may still be called at the prompt)
printf 'print(weir.param("allowed_lateness", 0))\n' >session.txt
timeout 30 "$WEIR" repl job.lua --replay input.replay --param allowed_lateness=2s --param typo=1 \
  <session.txt >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc 0 "repl --param"
expect_out_has "2000" "repl: weir.param reads --param"
expect_err_has "weir: warning: --param typo=1: the job never reads it" "repl: an unread parameter is a warning"

# the sweep: the table, the first output per window, the lines that differ (golden)
run_weir sweep job.lua --replay input.replay --param allowed_lateness=0,1s,3s
expect_rc 0 "sweep"
diff -u "$ROOT/tests/cli/sweep/allowed-lateness.out" "$TMP/out" >diff.txt && ok || bad "sweep table:
$(cat diff.txt)"
expect_err_has "[#1 allowed_lateness=0] weir: window tumbling_event_time apply (job.lua:33): 3 late record(s) dropped" "a setting's messages are shown with the setting"

# two lists: every combination, and the latency out_of_orderness costs
run_weir sweep job.lua --replay input.replay --param allowed_lateness=0,1s --param out_of_orderness=0,2s
expect_rc 0 "sweep of two parameters"
expect_out_has "4 setting(s)" "2 x 2 settings"
expect_out_has "#4  allowed_lateness=1s out_of_orderness=2s" "the last combination"
expect_out_has "[1718157600000, 1718157605000)  7.2s  12s (+4.8s)  7.2s  12s (+4.8s)" "2 s of out-of-orderness delays the first window's output"

# each setting is its own process: a global the job sets does not reach the next one
cat >global.lua <<'JOB'
local weir = require("weir")
local l = weir.param("allowed_lateness", 0)
assert(_G.seen == nil, "a global from an earlier setting")
_G.seen = true
local env = weir.env{}
env:replay("x"):map(function(x) return x .. " " .. l end):print()
env:execute()
JOB
run_weir sweep global.lua --replay input.replay --param allowed_lateness=0,1
expect_rc 0 "settings are isolated"
expect_out_has "#2  allowed_lateness=1          12              0           0             0            12      24" "no window: nothing fired; every line differs"

# the example itself reads both parameters
run_weir sweep "$ROOT/examples/allowed-lateness/job.lua" --replay "$ROOT/examples/allowed-lateness/input.replay" --param allowed_lateness=0,3s --param out_of_orderness=0,2s
expect_rc 0 "sweep of the example"
expect_out_has "#4  allowed_lateness=3s out_of_orderness=2s" "the example's sweep"

# usage errors
run_weir sweep job.lua --replay input.replay --param allowed_latness=0,1s
expect_rc 2 "sweep: a misspelt parameter"
expect_err_has "weir: --param allowed_latness=0: the job never reads it" "sweep: the child's error is shown"
expect_err_has "weir: sweep: setting #1 (allowed_latness=0) failed (exit 2)" "sweep: the failing setting is named"
run_weir sweep job.lua --param allowed_lateness=0,1s
expect_rc 2 "sweep without --replay"
expect_err_has "sweep: needs --replay FILE" "sweep without --replay is named"
run_weir sweep job.lua --replay input.replay
expect_rc 2 "sweep without --param"
expect_err_has "sweep: needs at least one --param NAME=V1,V2,..." "sweep without --param is named"
run_weir sweep job.lua --replay input.replay --param allowed_lateness=0,,1s
expect_rc 2 "an empty value"
expect_err_has "--param allowed_lateness=0,,1s: an empty value in the list" "the empty value is named"
run_weir sweep job.lua --replay input.replay --param allowed_lateness
expect_rc 2 "sweep --param without ="
expect_err_has "--param needs NAME=V1,V2,... (e.g. allowed_lateness=0,1s,5s), got allowed_lateness" "sweep's --param form"
run_weir sweep job.lua --replay input.replay --param a=1 --param a=2
expect_rc 2 "sweep: a parameter twice"
expect_err_has "--param a=2: a is given twice (give its values as one list: a=A,B)" "sweep: twice is named"
run_weir sweep job.lua --replay input.replay --param allowed_lateness=0 --progress
expect_rc 2 "sweep --progress"
expect_err_has "--progress is not an option of weir sweep" "sweep: a run-only option is named"
run_weir sweep job.lua --replay missing.replay --param allowed_lateness=0
expect_rc 2 "sweep: a missing replay file"
expect_err_has "replay file missing.replay" "sweep: the missing replay file is named"
run_weir sweep --help
expect_rc 0 "sweep --help"
expect_out_has "What-if: runs the job on the replay once per combination" "sweep --help describes sweep"
finish
