#!/usr/bin/env bash
# The record formats through the real sources: JSON lines over a socket into typed records
# (parsed in Lua's driver by the same C as files), CSV with a header over a socket into tables,
# JSON from a pipe on stdin (C's streaming path), and --replay replacing a JSON source.
. "$(dirname "$0")/lib.bash"
SERVE="$BUILD/tcp_serve"

cat > sock.lua <<'LUA'
local weir = require("weir")
local click = weir.record_type("click", { "string user", "double ts" })
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local fmt = weir.args[2]
local opts = fmt == "json" and { format = "json", record = click }
  or { format = "csv", header = true }
local src = env:socket_text_stream("127.0.0.1", tonumber(weir.args[1]), opts)
src:map(function(r) return ("%s %s"):format(r.user, r.ts) end):print()
src:get_side_output(errors):map(function(e) return "bad " .. e.error end):print()
env:execute()
LUA
printf '{"user":"ann","ts":1}\n{"user":"bob",}\n{"ts":3,"user":"cy"}' > j.txt
rm -f port; "$SERVE" port j.txt & srv=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
run_weir run sock.lua -- "$(cat port)" json
wait $srv
expect_rc 0 "JSON lines over a socket"
expect_out "ann 1
bad line 2: column 15: string or '}' expected near '}': \"{\\\"user\\\":\\\"bob\\\",}\"
cy 3" "typed records from a socket; a malformed line routed with its column"

printf 'ts,user\r\n1,"a,b"\r\n2\r\n3,c\r\n' > c.txt
rm -f port; "$SERVE" port c.txt & srv=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
run_weir run sock.lua -- "$(cat port)" csv
wait $srv
expect_rc 0 "CSV rows over a socket"
expect_out "a,b 1
bad line 3: expected 2 fields (as the header), got 1: \"2\"
c 3" "CSV with a header from a socket, CRLF; a short row routed"

cat > stdin.lua <<'LUA'
local weir = require("weir")
local ev = weir.record_type("ev", { "int32_t key", "string[8] name" })
local env = weir.env()
env:stdin{ format = "json", record = ev }
  :map(function(r) return r.key .. "=" .. r.name end):print()
env:execute()
LUA
# a pipe on stdin (process substitution keeps run_weir, and $rc, in this shell)
run_weir run stdin.lua < <(printf '{"key":1,"name":"one"}\n{"name":"two","key":2}\n{"key":3}\n')
expect_rc 1 "a JSON line without a field fails the job"
expect_err_has "weir: stdin, subtask 1/1: line 3: field name (string) is missing" \
  "the missing field is named with its line"
run_weir run stdin.lua < <(printf '{"key":1,"name":"one"}\n{"name":"two","key":2}\n')
expect_rc 0 "JSON lines from a pipe"
expect_out "1=one
2=two" "stdin from a pipe, parsed in C"

printf '{"user":"r","ts":5}\n+1s {"user":"s","ts":6}\n' > in.replay
run_weir run sock.lua --replay in.replay -- 1 json
expect_rc 0 "--replay replaces a JSON socket"
expect_out "r 5
s 6" "--replay keeps the replaced source's format and record"

finish
