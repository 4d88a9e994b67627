#!/usr/bin/env bash
# Jobs find their files: the job's folder is on package.path and weir.script_dir names it, so
# a module and a data file next to the job work from any working directory; a missing input
# file names the script line and where it was looked for.
. "$(dirname "$0")/lib.bash"

mkdir -p proj/lib elsewhere
cat > proj/mymod.lua <<'LUA'
return { twice = function(x) return x * 2 end }
LUA
cat > proj/lib/init.lua <<'LUA'
return { name = "lib" }
LUA
printf '1\n2\n3\n' > proj/nums.txt
cat > proj/job.lua <<'LUA'
local weir = require("weir")
local mymod = require("mymod")
local lib = require("lib")
local env = weir.env()
env:read_text_file(weir.script_dir .. "/nums.txt")
  :map(function(s) return lib.name .. " " .. mymod.twice(tonumber(s)) end)
  :print()
env:execute()
LUA

expected="lib 2
lib 4
lib 6"
for where in proj elsewhere . /; do
  (cd "$where" && timeout 30 "$WEIR" run "$TMP/proj/job.lua" >"$TMP/out" 2>"$TMP/err")
  rc=$?
  expect_rc 0 "job run from $where"
  expect_out "$expected" "module and data file found from $where"
done
# a relative job path from another folder
(cd elsewhere && timeout 30 "$WEIR" run ../proj/job.lua >"$TMP/out" 2>"$TMP/err")
rc=$?
expect_rc 0 "relative job path"
expect_out "$expected" "relative job path finds module and data"

cat > proj/where.lua <<'LUA'
print(require("weir").script_dir)
LUA
(cd elsewhere && timeout 30 "$WEIR" run ../proj/where.lua >"$TMP/out" 2>"$TMP/err")
expect_out "$(cd proj && pwd -P)" "weir.script_dir is the job's folder, absolute"

# a missing input file: the script line, the working directory, and the job's folder
cat > proj/rel.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:read_text_file("nums.txt")
  :print()
env:execute()
LUA
(cd elsewhere && timeout 30 "$WEIR" run ../proj/rel.lua >"$TMP/out" 2>"$TMP/err")
rc=$?
expect_rc 1 "missing relative file"
expect_err_has "weir: ../proj/rel.lua:3: read_text_file \"nums.txt\": No such file or directory" \
  "the missing file is named with the script line"
expect_err_has "(looked in the working directory, $(cd elsewhere && pwd -P); the job's folder has it: use weir.script_dir .. \"/nums.txt\")" \
  "the folder looked in and the fix"
sed -i 's/nums.txt/absent.txt/' proj/rel.lua
(cd elsewhere && timeout 30 "$WEIR" run ../proj/rel.lua >"$TMP/out" 2>"$TMP/err")
rc=$?
expect_rc 1 "missing file, nowhere"
expect_err_has "weir.script_dir names the job's folder, $(cd proj && pwd -P))" "names the job's folder"
# weir explain opens no file
(cd elsewhere && timeout 30 "$WEIR" explain ../proj/rel.lua >"$TMP/out" 2>"$TMP/err")
rc=$?
expect_rc 0 "explain with a missing input file"
# --replay replaces the missing file: no complaint
printf 'x\n' > in.replay
(cd elsewhere && timeout 30 "$WEIR" run ../proj/rel.lua --replay ../in.replay >"$TMP/out" 2>"$TMP/err")
rc=$?
expect_rc 0 "--replay replaces the missing file"
expect_out "x" "the replay is read"

finish
