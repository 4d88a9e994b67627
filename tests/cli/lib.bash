# Shared helpers for the CLI tests: each test script sources this, calls check/expect_*,
# and ends with finish, which prints "N passed, N failed" and sets the exit status.
set -u
WEIR=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BUILD=$(dirname "$WEIR")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# run_weir ARGS...: runs weir, leaving stdout in $TMP/out, stderr in $TMP/err, status in $rc.
# The timeout only catches a hang (exit 124): 120 s, for commands of at most seconds, so that a
# slow machine (2 cores under load, AddressSanitizer) never reaches it.
run_weir() {
  timeout 120 "$WEIR" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
}

expect_rc() { [ "$rc" = "$1" ] && ok || bad "$2: exit status $rc, expected $1 (stderr: $(head -c 300 "$TMP/err"))"; }
expect_out() { [ "$(cat "$TMP/out")" = "$1" ] && ok || bad "$2: stdout was:
$(cat "$TMP/out")
expected:
$1"; }
expect_err_has() { grep -qF -- "$1" "$TMP/err" && ok || bad "$2: stderr lacks '$1'; stderr was:
$(cat "$TMP/err")"; }
expect_out_has() { grep -qF -- "$1" "$TMP/out" && ok || bad "$2: stdout lacks '$1'"; }

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}
