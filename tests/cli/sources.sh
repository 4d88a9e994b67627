#!/usr/bin/env bash
# Sources through the real runtime: files with awkward bytes, stdin, sockets (a local server),
# a refused connect, and --replay substitution.
. "$(dirname "$0")/lib.bash"
SERVE="$BUILD/tcp_serve"

# A job that prints each line's length and a checksum-free view of its bytes.
cat > lens.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
local src = weir.args[1] == "stdin" and env:stdin() or env:read_text_file(weir.args[1])
src:map(function(l) return { #l, (l:gsub("%z", "<NUL>"):gsub("[\128-\255]", "?")) } end):print()
env:execute()
LUA

printf 'a\r\nb\0c\n\xff\xfe bad utf8\n\nlast' > odd.txt
run_weir run lens.lua -- odd.txt
expect_rc 0 "awkward file"
expect_out "(1,a)
(3,b<NUL>c)
(11,?? bad utf8)
(0,)
(4,last)" "CRLF stripped, NUL and invalid UTF-8 kept, empty line and last line delivered"

{ echo short; head -c 1100000 /dev/zero | tr '\0' x; echo; echo after; } > long.txt
run_weir run lens.lua -- long.txt
expect_rc 0 "overlong line"
expect_out "(5,short)
(5,after)" "an overlong line is skipped, the rest delivered"
expect_err_has "line 2" "the overlong line is reported with its number"
expect_err_has "1 record(s) could not be delivered" "the drop is counted at the end"

printf 'one\ntwo\n' | timeout 20 "$WEIR" run lens.lua -- stdin >out 2>err
rc=$?
expect_rc 0 "stdin from a pipe"
expect_out "(3,one)
(3,two)" "stdin lines"

"$WEIR" run lens.lua -- stdin < odd.txt > out 2>err
rc=$?
expect_out "(1,a)
(3,b<NUL>c)
(11,?? bad utf8)
(0,)
(4,last)" "stdin from a file"

run_weir run lens.lua -- nothere.txt
expect_rc 1 "missing input file"
expect_err_has "nothere.txt" "the missing input file is named"

# Sockets against a local one-shot server.
cat > sock.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
env:socket_text_stream("127.0.0.1", tonumber(weir.args[1]),
                       { delimiter = weir.args[2], max_retry = tonumber(weir.args[3]) })
  :key_by(function(w) return w end)
  :map(function(w) return { w, #w } end)
  :print()
env:execute()
LUA
printf 'a\nb\nc' > abc.txt
rm -f port; "$SERVE" port abc.txt & srv=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
run_weir run sock.lua -- "$(cat port)" $'\n' 0
wait $srv
expect_rc 0 "socket job ends when the server closes"
expect_out "2> (a,1)
1> (b,1)
1> (c,1)" "socket lines keyed as Flink, last line without newline delivered"

printf 'a||bb||' > d1.txt
printf 'ccc' > d2.txt
rm -f port; "$SERVE" port d1.txt d2.txt & srv=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
run_weir run sock.lua -- "$(cat port)" '||' 2
wait $srv
expect_rc 0 "socket with a reconnect"
expect_out "2> (a,1)
2> (bb,2)
2> (ccc,3)" "multi-character delimiter; max_retry 2 reconnects once"

# A half line when the server closes is a record of its own, also when weir reconnects:
# "hal" and "f" stay apart (Flink's reader would make "half").
printf 'a\nhal' > h1.txt
printf 'f\nend' > h2.txt
rm -f port; "$SERVE" port h1.txt h2.txt & srv=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
run_weir run sock.lua -- "$(cat port)" $'\n' 2
wait $srv
expect_rc 0 "socket reconnect after a half line"
expect_out "2> (a,1)
1> (hal,3)
1> (f,1)
2> (end,3)" "the half line before a reconnect is a record of its own"

# A port nobody listens on: take one from the server, then let it exit.
rm -f port; "$SERVE" port & srv=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
dead=$(cat port)
(exec 3<>/dev/tcp/127.0.0.1/"$dead") 2>/dev/null; wait $srv
run_weir run sock.lua -- "$dead" $'\n' 0
expect_rc 1 "refused connect fails the job"
expect_err_has "127.0.0.1:$dead" "the refused address is named"
expect_err_has "refused" "the reason is given"
expect_err_has "(is a server listening? e.g. nc -lk $dead)" "the refusal suggests a server"

# --replay replaces the socket.
printf 'a\n+1s b\n' > in.replay
run_weir run sock.lua --replay in.replay -- 1 $'\n' 0
expect_rc 0 "--replay replaces the socket"
expect_out "2> (a,1)
1> (b,1)" "--replay output"

finish
