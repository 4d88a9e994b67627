#!/usr/bin/env bash
# Runs one golden scenario or example: DIR/job.lua with DIR/input.replay (if present) on the
# virtual clock, from inside DIR, and compares stdout with DIR/expected.out exactly. Optional:
# DIR/args (job arguments),
# DIR/expected.err (stderr, exact), DIR/expected.status (exit status, default 0). With a third
# argument --verify-checkpoints, runs the job in round-trip mode (weir.roundtrip; stderr is then
# not compared: the output and the status must be the same).
set -u
weir=$1
dir=$2
mode=${3:-}
cd "$dir" || exit 2
args=(run job.lua)
[ "$mode" = --verify-checkpoints ] && args+=(--verify-checkpoints)
[ -f input.replay ] && args+=(--replay input.replay)
# DIR/args: words passed to the job after "--" (weir.args)
if [ -f args ]; then
  read -r -a extra < args
  args+=(-- "${extra[@]}")
fi
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
timeout 30 "$weir" "${args[@]}" >"$out" 2>"$err"
status=$?
want_status=0
[ -f expected.status ] && want_status=$(cat expected.status)
fail=0
if [ "$status" != "$want_status" ]; then
  echo "FAIL $(basename "$dir"): exit status $status, expected $want_status"
  fail=1
fi
if ! diff -u expected.out "$out" >/dev/null; then
  echo "FAIL $(basename "$dir"): stdout differs (- expected, + actual):"
  diff -u expected.out "$out" | head -60
  fail=1
fi
if [ -z "$mode" ] && [ -f expected.err ] && ! diff -u expected.err "$err" >/dev/null; then
  echo "FAIL $(basename "$dir"): stderr differs (- expected, + actual):"
  diff -u expected.err "$err" | head -60
  fail=1
fi
if [ $fail -ne 0 ]; then
  echo "--- stderr:"
  head -40 "$err"
  exit 1
fi
echo "ok $(basename "$dir")"
