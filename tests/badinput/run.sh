#!/usr/bin/env bash
# Runs one bad-input case: DIR/job.lua (from inside DIR) as DIR/expect says, and checks the exit
# status, the messages, and that nothing vanished. DIR/expect holds lines "KEY VALUE":
#   args ARGS...     the command line after "weir" (default: run job.lua); words split on spaces
#   arg WORD         one more word for that command line, taken whole (repeatable; for words
#                    with spaces)
#   stdin FILE       a file fed to standard input (default: /dev/null)
#   exit N           the expected exit status (default 0)
#   stderr TEXT      TEXT appears in stderr (repeatable; fixed text, not a pattern)
#   no-stderr TEXT   TEXT does not appear in stderr (repeatable)
#   stdout TEXT      TEXT appears in stdout (repeatable)
#   in N             N records go into the job; then, when the job exits 0,
#                    N = out + err + late, where stdout lines whose first word is "out", "err"
#                    or "late" count 1 each ("out:K" counts K), and weir's own reports on stderr
#                    ("N late record(s) dropped", "N failed record(s) went to an error side
#                    output", "N record(s) could not be delivered") count as err and late.
#                    When the job fails, out + err + late < N (the failure is the report).
#                    Stdout lines may carry a print prefix ("2> "). Not for jobs whose outputs
#                    fan out (sliding windows, flat_map): there N is not a sum.
#   out N            exactly N records came out (stdout lines counted as above, out only)
#   timeout S        seconds before the case counts as hung (default 30)
# Jobs can require("badinput") (tests/badinput/lib/badinput.lua: temporary input files made at
# run time, so the repository holds no large or binary inputs).
# Every case also checks that stderr has no sign of a broken error path or a sanitizer report.
set -u
weir=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
dir=$2
name=$(basename "$dir")
export LUA_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/?.lua;;"
cd "$dir" || exit 2
[ -f expect ] || { echo "FAIL $name: no expect file"; exit 1; }

args="run job.lua" stdin=/dev/null want_exit=0 want_in="" want_out="" limit=30
has=() hasnt=() outs=() extra=()
number() { [[ $2 =~ ^[0-9]+$ ]] || { echo "FAIL $name: expect: $1 wants a number, got '$2'"; exit 1; }; }
while IFS= read -r line || [ -n "$line" ]; do
  line=${line%$'\r'}
  case "$line" in ''|'#'*) continue ;; esac
  key=${line%% *} val=${line#* }
  if [ "$key" = "$line" ] || [ -z "$val" ]; then
    echo "FAIL $name: expect: '$key' has no value"; exit 1
  fi
  case "$key" in
    args) args=$val ;;
    arg) extra+=("$val") ;;
    out) number out "$val"; want_out=$val ;;
    stdin) stdin=$val ;;
    exit) number exit "$val"; want_exit=$val ;;
    stderr) has+=("$val") ;;
    no-stderr) hasnt+=("$val") ;;
    stdout) outs+=("$val") ;;
    in) number in "$val"; want_in=$val ;;
    timeout) number timeout "$val"; limit=$val ;;
    *) echo "FAIL $name: unknown key '$key' in expect"; exit 1 ;;
  esac
done < expect
# signs of an error path that failed, an internal error, or a sanitizer finding
hasnt+=("weir: weir:" "attempt to index local 'tb'" "internal:" "no runtime" "AddressSanitizer"
        "runtime error:" "LeakSanitizer" "internal error")
[ -r "$stdin" ] || { echo "FAIL $name: stdin file '$stdin' is missing"; exit 1; }

out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
read -r -a argv <<< "$args"
argv+=("${extra[@]}")
# -k: a job stuck in a JIT-compiled loop may never act on the first signal
timeout -k 5 "$limit" "$weir" "${argv[@]}" <"$stdin" >"$out" 2>"$err"
status=$?
fail=0
bad() { echo "FAIL $name: $*"; fail=1; }
[ "$status" = 124 ] || [ "$status" = 137 ] && bad "hung (no exit within ${limit}s)"
[ "$status" = "$want_exit" ] || bad "exit status $status, expected $want_exit"
for t in "${has[@]}"; do grep -qF -- "$t" "$err" || bad "stderr lacks: $t"; done
for t in "${hasnt[@]}"; do grep -qF -- "$t" "$err" && bad "stderr has: $t"; done
for t in "${outs[@]}"; do grep -qF -- "$t" "$out" || bad "stdout lacks: $t"; done
if [ -n "$want_in" ] || [ -n "$want_out" ]; then
  counts=$(awk '
    { sub(/^[0-9]+> /, "") }
    $1 == "out" || $1 == "err" || $1 == "late" { n[$1]++ }
    $1 ~ /^(out|err|late):[0-9]+$/ { split($1, p, ":"); n[p[1]] += p[2] }
    $1 ~ /^(out|err|late):/ && $1 !~ /^(out|err|late):[0-9]+$/ { bad++ }
    END { printf "%d %d %d %d", n["out"], n["err"], n["late"], bad }' "$out")
  read -r n_out n_err n_late n_bad <<< "$counts"
  [ "$n_bad" = 0 ] || bad "$n_bad stdout line(s) with a malformed count (out:K)"
  if [ -n "$want_out" ] && [ "$n_out" != "$want_out" ]; then
    bad "out $n_out, expected $want_out"
  fi
fi
if [ -n "$want_in" ]; then
  r_late=$(grep -oE '[0-9]+ late record\(s\) dropped' "$err" | awk '{s += $1} END {print s + 0}')
  r_err=$(grep -oE '[0-9]+ (failed record\(s\) went to an error side output|record\(s\) could not be delivered)' "$err" |
    awk '{s += $1} END {print s + 0}')
  total=$((n_out + n_err + n_late + r_late + r_err))
  if [ "$status" = 0 ]; then
    [ "$total" = "$want_in" ] || bad "in $want_in, but out $n_out + err $((n_err + r_err)) + late $((n_late + r_late)) = $total"
  else
    [ "$total" -lt "$want_in" ] || bad "failed, yet out + err + late = $total of $want_in"
  fi
fi
if [ $fail -ne 0 ]; then
  echo "--- stdout (head):"; head -20 "$out"
  echo "--- stderr (head):"; head -40 "$err"
  exit 1
fi
echo "ok $name"
