#!/usr/bin/env bash
# A full disk while checkpointing (issue 14 item 7(g); docs/API.md, Checkpoints): a checkpoint
# that cannot be written is declined with a warning naming the file and the reason, its
# temporary directory removed, and the job goes on; once there is room again the next one
# succeeds; after 3 failures in a row the job fails (exit 1), the last good checkpoint stays
# valid and a rerun continues from it with output exactly-once. The disk is really full: the
# checkpoint directory is on a 512 KiB tmpfs, which the job fills from its own code. Mounting
# needs root, or (as any user on Debian 12) a user and mount namespace: the script runs itself
# again under `unshare -rm` when it is not root. With neither it says it is skipped.
if [ "$(id -u)" != 0 ] && [ -z "${WEIR_DISKFULL_NS:-}" ] && unshare -rm true 2>/dev/null; then
  WEIR_DISKFULL_NS=1 exec unshare -rm "$0" "$@"
fi
. "$(dirname "$0")/lib.bash"

mkdir -p full
if ! mount -t tmpfs -o size=512k tmpfs full 2>/dev/null; then
  echo "skipped: mounting a tmpfs needs root or a user namespace (unshare -rm)"
  finish
fi
trap 'umount full 2>/dev/null; rm -rf "$TMP"' EXIT

# fill() takes the tmpfs's last byte at record 3000; record free_at (-1: never) frees it again
cat > fill.lua <<'LUA'
local weir = require("weir")
local dir, free_at = weir.args[1], tonumber(weir.args[2])
local function fill()
  local fh = assert(io.open(dir .. "/filler", "wb"))
  local chunk = string.rep("x", 4096)
  for _ = 1, 256 do -- 1 MiB: more than the tmpfs holds (stdio reports the failure late)
    fh:write(chunk)
  end
  fh:close()
end
local env = weir.env()
env:generate(function(i)
  if i == 3000 and not os.getenv("NO_FILL") then fill() end
  if i == free_at then os.remove(dir .. "/filler") end
  return i
end, { count = 10000 }):filter(function(i) return i % 100 == 0 end)
  :map(function(i) return "n " .. i end):write_text("out.txt")
env:execute()
LUA
seq 0 100 9900 | sed 's/^/n /' > want.txt

run_weir run fill.lua --checkpoint-dir full/ck --checkpoint-interval 0 -- full 4500
expect_rc 0 "disk full for a while: the job goes on"
expect_err_has "declined: full/ck/.tmp-chk-" "a declined checkpoint names the file"
expect_err_has "no space left on device" "the reason is named"
expect_err_has "failure in a row, 3 fail the job; it goes on)" "the count is said"
cmp -s out.txt want.txt && ok || bad "declined checkpoints changed the output"
last=$(ls -d full/ck/chk-* | tail -1)
run_weir checkpoint inspect "$last"
expect_out_has "final" "the checkpoint after the disk had room again succeeded"
[ -z "$(ls -A full/ck | grep '^\.tmp-')" ] && ok || bad "a declined checkpoint left $(ls -A full/ck)"

rm -rf full/ck full/filler out.txt
run_weir run fill.lua --checkpoint-dir full/ck --checkpoint-interval 0 -- full -1
expect_rc 1 "disk full for good: the job fails"
expect_err_has "failed, 3 in a row: full/ck/.tmp-chk-" "repeated failures are loud, naming the file"
[ -z "$(ls -A full/ck | grep '^\.tmp-')" ] && ok || bad "the failed checkpoints left $(ls -A full/ck)"
last=$(ls -d full/ck/chk-* | tail -1)
run_weir checkpoint verify "$last"
expect_rc 0 "the last good checkpoint stays valid"
# room again: the rerun continues from the last good checkpoint, exactly once
rm -f full/filler
NO_FILL=1 run_weir run fill.lua --checkpoint-dir full/ck -- full -1
expect_rc 0 "the rerun after the disk had room again"
expect_err_has "restored full/ck/chk-" "the rerun restores the last good checkpoint"
cmp -s out.txt want.txt && ok || bad "after the failure and the rerun the output differs: $(diff want.txt out.txt | head -3)"

finish
