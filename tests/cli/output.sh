#!/usr/bin/env bash
# Outputs report their own failures: a print sink whose stdout is closed by its reader
# (EPIPE), closed before weir started, or full fails the job with exit 1 and names the sink;
# no SIGPIPE death, no crash.
. "$(dirname "$0")/lib.bash"

cat > many.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:generate(function(i) return i end, { count = 200000 }):print()
env:execute()
LUA
cat > few.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:from_elements(1, 2, 3):print()
env:execute()
LUA

# head exits after one line: far more than a pipe holds follows, so a write must fail
timeout 30 "$WEIR" run many.lua 2> err | head -n 1 > out
rc=${PIPESTATUS[0]}
expect_rc 1 "print into a pipe its reader closed"
expect_out 0 "print into a pipe its reader closed"
expect_err_has "weir: print (many.lua:3): standard output closed (broken pipe)" "EPIPE"

timeout 30 "$WEIR" run few.lua >&- 2> err
rc=$?
expect_rc 1 "print to a closed stdout"
expect_err_has "weir: print (few.lua:3): standard output is closed (bad file descriptor)" \
  "closed stdout"
grep -q "Assertion" err && bad "closed stdout: $(cat err)" || ok

if [ -w /dev/full ]; then
  timeout 30 "$WEIR" run many.lua > /dev/full 2> err
  rc=$?
  expect_rc 1 "print to a full disk"
  expect_err_has "weir: print (many.lua:3): cannot write to standard output: no space left on device" \
    "/dev/full"
  timeout 30 "$WEIR" run few.lua > /dev/full 2> err
  rc=$?
  expect_rc 1 "print to a full disk, caught at the last flush"
  expect_err_has "weir: print (few.lua:3): cannot write to standard output: no space left on device" \
    "/dev/full, last flush"
fi

finish
