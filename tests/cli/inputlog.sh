#!/usr/bin/env bash
# --input-log (docs/API.md, Checkpoints): socket_text_stream and stdin from a pipe log what they
# read into DIR/input-UID.log, so a job killed with kill -9 and run again replays the bytes it
# had read after its last checkpoint instead of losing them; the log's offset is in the
# checkpoint, checked against the log on restore; the bytes no kept checkpoint needs are
# released. The kill here comes from the job itself at a known line, which is the last line the
# producer gave that run: every byte of it has been read, so nothing can be in a kernel buffer.
. "$(dirname "$0")/lib.bash"
SERVE="$BUILD/tcp_serve"

cat > sj.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
local src = weir.args[2] and env:socket_text_stream("127.0.0.1", tonumber(weir.args[2]),
  { max_retry = 0 }) or env:stdin()
src:map(function(l)
  if l == weir.args[1] then os.execute("kill -9 $PPID") end
  return l .. "."
end):write_text("out.txt")
env:execute()
LUA
seq 1 4000 > p1
seq 4001 6000 > p2
seq 1 6000 | sed 's/$/./' > want.txt

# stdin from a pipe, without the log: what was read after the checkpoint is lost, and said so
run_weir run sj.lua --checkpoint-dir ck --checkpoint-interval 0 -- 4000 < <(cat p1)
expect_rc 137 "pipe: killed at line 4000"
run_weir run sj.lua --checkpoint-dir ck -- none < <(cat p2)
expect_rc 0 "pipe: rerun without --input-log"
expect_err_has "stdin cannot go back: records it delivered after the checkpoint are lost (--input-log keeps them)" \
  "without the log the loss is said"
lost=$(comm -23 <(sort want.txt) <(sort out.txt) | wc -l)
[ "$lost" -gt 0 ] && ok || bad "pipe without the log: expected lost lines, lost $lost"

# with the log: nothing lost, nothing twice
rm -rf ck out.txt
run_weir run sj.lua --checkpoint-dir ck --checkpoint-interval 0 --input-log -- 4000 < <(cat p1)
expect_rc 137 "pipe + log: killed at line 4000"
[ -s ck/input-source-stdin-1.log ] && ok || bad "pipe + log: no log in ck: $(ls ck)"
run_weir run sj.lua --checkpoint-dir ck --input-log -- none < <(cat p2)
expect_rc 0 "pipe + log: rerun"
expect_err_has "stdin continues after line " "pipe + log: the restore names the line"
expect_err_has "of its input log)" "pipe + log: ... and the log"
cmp -s want.txt out.txt && ok || bad "pipe + log: output differs: $(diff want.txt out.txt | head -5)"

# the same checkpoint without --input-log is refused, naming the option
rm -rf ck out.txt
run_weir run sj.lua --checkpoint-dir ck --checkpoint-interval 0 --input-log -- 4000 < <(cat p1)
cp -r ck ck.bak
run_weir checkpoint inspect "$(ls -d ck/chk-* | tail -1)"
expect_out_has ", in its input log (--input-log)" "inspect says the position is in the log"
run_weir run sj.lua --checkpoint-dir ck -- none < <(cat p2)
expect_rc 1 "a log checkpoint without --input-log"
expect_err_has "the checkpoint continues from the input log: run with --input-log" \
  "without --input-log: said"
# a changed log is refused, naming it
rm -rf ck && cp -r ck.bak ck
tr 0-9 a-j < ck.bak/input-source-stdin-1.log > ck/input-source-stdin-1.log
run_weir run sj.lua --checkpoint-dir ck --input-log -- none < <(cat p2)
expect_rc 1 "a changed log"
expect_err_has "the input log ck/input-source-stdin-1.log changed" "a changed log is named"
# a cut log too
rm -rf ck && cp -r ck.bak ck
truncate -s 10 ck/input-source-stdin-1.log
run_weir run sj.lua --checkpoint-dir ck --input-log -- none < <(cat p2)
expect_rc 1 "a cut log"
expect_err_has "has 10 bytes, the checkpoint read" "a cut log is named"
# the log of a pipe checkpoint is not a file: a regular file on stdin is refused
rm -rf ck && cp -r ck.bak ck
run_weir run sj.lua --checkpoint-dir ck --input-log -- none < p2
expect_rc 1 "pipe checkpoint, file stdin"
expect_err_has "it read a pipe through its input log, and this is a regular file" "said"

# stdin from a regular file needs no log and makes none
rm -rf ck out.txt
run_weir run sj.lua --checkpoint-dir ck --checkpoint-interval 0 --input-log -- 4000 < p1
expect_rc 137 "file stdin + --input-log: killed"
[ ! -e ck/input-source-stdin-1.log ] && ok || bad "a regular file on stdin made a log"

# a socket: the server gives p1 on the first connection and p2 on the next
rm -rf ck out.txt port
"$SERVE" port p1 p2 & srv=$!
for _ in $(seq 200); do [ -s port ] && break; sleep 0.05; done
run_weir run sj.lua --checkpoint-dir ck --checkpoint-interval 0 --input-log -- 4000 "$(cat port)"
expect_rc 137 "socket + log: killed at line 4000"
run_weir run sj.lua --checkpoint-dir ck --input-log -- none "$(cat port)"
expect_rc 0 "socket + log: rerun"
wait $srv
expect_err_has "socket_text_stream 127.0.0.1:" "socket + log: restored"
expect_err_has "of its input log)" "socket + log: from the log"
cmp -s want.txt out.txt && ok || bad "socket + log: output differs: $(diff want.txt out.txt | head -5)"
# and without the log the socket loses them
rm -rf ck out.txt port
"$SERVE" port p1 p2 & srv=$!
for _ in $(seq 200); do [ -s port ] && break; sleep 0.05; done
run_weir run sj.lua --checkpoint-dir ck --checkpoint-interval 0 -- 4000 "$(cat port)"
run_weir run sj.lua --checkpoint-dir ck -- none "$(cat port)"
wait $srv
expect_err_has "cannot go back: records it delivered after the checkpoint are lost" \
  "socket without the log: the loss is said"

# the bytes no kept checkpoint needs are released (a hole: the log keeps its size)
rm -rf ck out.txt
# 20000 lines of 200 bytes: about 20 batches, so about 20 checkpoints
seq -f "%0200.0f" 1 20000 > big
run_weir run sj.lua --checkpoint-dir ck --checkpoint-interval 0 --input-log -- none < <(cat big)
expect_rc 0 "a long pipe with the log"
size=$(stat -c %s ck/input-source-stdin-1.log)
used=$(( $(stat -c %b ck/input-source-stdin-1.log) * $(stat -c %B ck/input-source-stdin-1.log) ))
[ "$size" = "$(stat -c %s big)" ] && ok || bad "the log holds $size bytes, the input $(stat -c %s big)"
if [ "$used" -lt $((size / 4)) ]; then
  ok
elif fallocate -p -o 0 -l 4096 ck/input-source-stdin-1.log 2>/dev/null; then
  bad "the log's old bytes were not released: $used of $size bytes allocated"
else
  echo "skipped the release check: this file system cannot punch holes"
fi

run_weir run sj.lua --input-log
expect_rc 2 "--input-log without --checkpoint-dir"
expect_err_has "--input-log needs --checkpoint-dir" "said"
finish
