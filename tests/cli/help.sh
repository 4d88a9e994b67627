#!/usr/bin/env bash
# --help after every command, options a command does not take, `weir JOB.lua`, help width.
. "$(dirname "$0")/lib.bash"

cat > job.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:from_elements("a"):print()
env:execute()
LUA

for cmd in run explain repl; do
  for flag in --help -h; do
    run_weir $cmd $flag
    expect_rc 0 "weir $cmd $flag"
    expect_out_has "usage: weir $cmd" "weir $cmd $flag prints its usage"
    expect_out_has "Options:" "weir $cmd $flag lists its options"
  done
  # after the job file and other options too
  run_weir $cmd job.lua -p 2 --help
  expect_rc 0 "weir $cmd job.lua -p 2 --help"
  [ ! -s "$TMP/err" ] && ok || bad "weir $cmd --help wrote to stderr: $(cat "$TMP/err")"
  run_weir help $cmd
  expect_rc 0 "weir help $cmd"
  expect_out_has "usage: weir $cmd" "weir help $cmd prints its usage"
done

# each command's help names only the options it takes, and each of those is accepted
run_weir run --help
for o in --parallelism --replay --check-triggers --progress --stall-warning --max-memory \
         --jit-verbose "-- ARGS"; do
  expect_out_has "$o" "weir run --help lists $o"
done
run_weir explain --help
grep -q -- "--progress" "$TMP/out" && bad "explain --help lists --progress" || ok
run_weir explain job.lua --progress
expect_rc 2 "explain --progress"
expect_err_has "weir: explain: --progress is not an option of weir explain" "the option is named"
run_weir repl --help
expect_out_has "--manual | --replay FILE" "repl --help lists --replay"
run_weir run job.lua --manual
expect_rc 2 "run --manual"
expect_err_has "--manual is not an option of weir run" "run --manual is named"

# --help after -- belongs to the job
cat > args.lua <<'LUA'
print(require("weir").args[1])
LUA
run_weir run args.lua -- --help
expect_rc 0 "run args.lua -- --help"
expect_out "--help" "--help after -- reaches weir.args"

# `weir JOB.lua` suggests `weir run JOB.lua`; an option before the command is named as one
run_weir job.lua
expect_rc 2 "weir job.lua"
expect_err_has "weir: unknown command job.lua (to run the job: weir run job.lua)" "suggests run"
run_weir --verbose
expect_rc 2 "weir --verbose"
expect_err_has "unknown option --verbose (options go after the command" "an option, not a command"
run_weir -V
expect_rc 0 "weir -V"
expect_out_has "weir 0." "-V prints the version"
run_weir help nosuch
expect_rc 2 "weir help nosuch"
expect_err_has "help: unknown command nosuch" "help names the unknown command"

# every help text fits 80 columns
for args in --help "run --help" "explain --help" "repl --help"; do
  run_weir $args
  wide=$(awk 'length($0) > 80' "$TMP/out")
  [ -z "$wide" ] && ok || bad "weir $args has lines over 80 columns: $wide"
done
# a usage error names the command's own usage and where its help is
run_weir run job.lua --bogus
expect_err_has "usage: weir run JOB.lua" "usage error shows run's usage"
expect_err_has "(weir run --help describes the options)" "usage error points at --help"

finish
