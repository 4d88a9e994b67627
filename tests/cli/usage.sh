#!/usr/bin/env bash
# The command line: help, version, usage errors (exit 2), job failures (exit 1).
. "$(dirname "$0")/lib.bash"

run_weir --help
expect_rc 0 "--help"
expect_out_has "weir run JOB.lua" "--help lists run"
expect_out_has "--replay FILE" "--help lists --replay"

run_weir --version
expect_rc 0 "--version"
expect_out_has "weir 0." "--version prints the version"

run_weir
expect_rc 2 "no arguments"
expect_err_has "usage:" "no arguments prints usage"

run_weir frobnicate
expect_rc 2 "unknown command"
expect_err_has "unknown command frobnicate" "unknown command is named"

cat > job.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
env:from_elements("a", "b", "c")
  :key_by(function(w) return w end)
  :map(function(w) return { w, #w } end)
  :print()
env:execute()
LUA

run_weir run job.lua --bogus
expect_rc 2 "unknown flag"
expect_err_has "unknown option --bogus" "unknown flag is named"

run_weir run missing.lua
expect_rc 2 "missing job file"
expect_err_has "missing.lua: No such file or directory" "missing job file is named"

run_weir run job.lua --replay nope.replay
expect_rc 2 "missing replay file"
expect_err_has "nope.replay" "missing replay file is named"

run_weir run job.lua --parallelism zero
expect_rc 2 "bad --parallelism"

run_weir run job.lua
expect_rc 0 "stateless job at parallelism 2"
expect_out "2> (a,1)
1> (b,1)
1> (c,1)" "keys a, b, c land on Flink's subtasks"

run_weir run job.lua --parallelism 1
expect_out "(a,1)
(b,1)
(c,1)" "--parallelism 1 overrides the script and drops the prefix"

run_weir run job.lua --replay job.lua
expect_rc 2 "--replay without a text source"
expect_err_has "--replay replaces the job's single text source, but the job has no text source (read_text_file, stdin, socket_text_stream, replay or manual)" "--replay explains, in a whole sentence"

run_weir explain job.lua
expect_rc 0 "explain"
expect_out_has "via hash (key groups)" "explain shows the hash partitioning"
expect_out_has "via forward, chained" "explain shows chaining"
expect_out_has "from_elements (3) (job.lua:3)" "explain gives a source its script line"

cat > args.lua <<'LUA'
local weir = require("weir")
print(#weir.args, weir.args[1], weir.args[2])
LUA
run_weir run args.lua -- one --two
expect_out "2	one	--two" "arguments after -- reach weir.args"

cat > builderr.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
env:from_elements(1):map(42)
LUA
run_weir run builderr.lua
expect_rc 1 "build error"
expect_err_has "weir: builderr.lua:3: map: expected a function" "build error names call and line"

cat > durerr.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ auto_watermark_interval = "5 sec" }
LUA
run_weir run durerr.lua
expect_rc 1 "bad duration"
expect_err_has 'durerr.lua:2: invalid duration "5 sec"' "bad duration names the text"

cat > usererr.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
env:from_elements("1", "x")
  :map(function(s)
    return tonumber(s) + 1
  end)
  :print()
env:execute()
LUA
run_weir run usererr.lua
expect_rc 1 "user error"
expect_err_has "map (usererr.lua:" "user error names the operator"
expect_err_has "usererr.lua:5: attempt to perform arithmetic" "user error names the script line"
expect_err_has 'record: "x"' "user error names the record"

long=$(printf 'y%.0s' $(seq 1 300))
cat > longrec.lua <<LUA
local weir = require("weir")
local env = weir.env()
env:from_elements("$long"):map(function(s) error("nope") end):print()
env:execute()
LUA
run_weir run longrec.lua
expect_err_has "record: \"$(printf 'y%.0s' $(seq 1 200))...\"" "the record is cut to 200 bytes"

finish
