#!/usr/bin/env bash
# Runs one REPL session test: `weir repl [job.lua] [ARGS from DIR/args] < DIR/session.txt`
# from inside DIR, and compares stdout with DIR/expected.out exactly (the non-interactive REPL
# prints no prompts, so a session's text is reproducible), stderr with DIR/expected.err when
# there is one, and the exit status with DIR/status (default 0: a session that hit an error
# exits 1).
set -u
weir=$1
dir=$2
cd "$dir" || exit 2
args=(repl)
[ -f job.lua ] && args+=(job.lua)
if [ -f args ]; then
  read -r -a extra < args
  args+=("${extra[@]}")
fi
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
HOME=$(mktemp -d) timeout 30 "$weir" "${args[@]}" < session.txt >"$out" 2>"$err"
status=$?
want=0
[ -f status ] && want=$(cat status)
if [ "$status" != "$want" ] || ! diff -u expected.out "$out" >/dev/null \
    || { [ -f expected.err ] && ! diff -u expected.err "$err" >/dev/null; }; then
  echo "FAIL $(basename "$dir"): exit status $status (expected $want); stdout (- expected, + actual):"
  diff -u expected.out "$out" | head -80
  if [ -f expected.err ]; then
    echo "--- stderr (- expected, + actual):"
    diff -u expected.err "$err" | head -40
  else
    echo "--- stderr:"
    head -40 "$err"
  fi
  exit 1
fi
echo "ok $(basename "$dir")"
