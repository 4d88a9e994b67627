#!/usr/bin/env bash
# Runs one REPL session test: `weir repl [job.lua] [ARGS from DIR/args] < DIR/session.txt`
# from inside DIR, and compares stdout with DIR/expected.out exactly (the non-interactive REPL
# prints no prompts, so a session's text is reproducible).
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
if [ "$status" != 0 ] || ! diff -u expected.out "$out" >/dev/null; then
  echo "FAIL $(basename "$dir"): exit status $status; stdout (- expected, + actual):"
  diff -u expected.out "$out" | head -80
  echo "--- stderr:"
  head -40 "$err"
  exit 1
fi
echo "ok $(basename "$dir")"
