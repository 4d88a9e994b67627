#!/usr/bin/env bash
# LuaJIT out of memory in user code (under a small address-space limit): LuaJIT runs no error
# handler then, yet the job fails cleanly, exit 1, naming what weir was doing (the record, or
# the window operator whose fires ran), never "attempt to index" from a broken error path.
# Skipped without prlimit, and under ASan (which needs a huge address space).
. "$(dirname "$0")/lib.bash"

if ! command -v prlimit >/dev/null || ldd "$WEIR" 2>/dev/null | grep -q libasan; then
  echo "skipped (no prlimit, or an ASan build)"
  finish
fi

cat > grow_map.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ on_error = weir.output_tag("errors") }
local keep = {}
env:from_collection({ 1, 2, 3 })
  :map(function(v)
    if v == 2 then
      local i = 0
      while true do
        i = i + 1
        keep[i] = { i }
      end
    end
    return "out " .. v
  end)
  :print()
env:execute()
LUA

cat > grow_window.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
local keep = {}
env:from_collection({ 1, 2, 3 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function(v) return v end)
  :window(weir.windows.tumbling_event_time("10ms"))
  :process(function(k, _, _, out)
    if k == 2 then
      local i = 0
      while true do
        i = i + 1
        keep[i] = { i }
      end
    end
    out("out " .. k)
  end)
  :print()
env:execute()
LUA

limit() { timeout 60 prlimit --as=600000000 "$WEIR" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }

limit run grow_map.lua
expect_rc 1 "map out of memory"
expect_err_has "the allocation was refused (while weir delivered element 2 of from_elements (3))" \
  "map out of memory"
expect_err_has "record: 2" "map out of memory"
expect_out "out 1" "map out of memory"

limit run grow_window.lua
expect_rc 1 "window out of memory"
expect_err_has "the allocation was refused (window tumbling_event_time process (grow_window.lua:9), subtask 1/1, firing its windows)" \
  "window out of memory"
grep -qF "attempt to index" "$TMP/err" && bad "broken error path: $(cat "$TMP/err")"

# with on_error the fire runs guarded: out of memory is still no record's failure
sed 's/local env = weir.env()/local env = weir.env{ on_error = weir.output_tag("e") }/' \
  grow_window.lua > grow_window_routed.lua
limit run grow_window_routed.lua
expect_rc 1 "window out of memory, on_error"
expect_err_has "the allocation was refused (window tumbling_event_time process (grow_window_routed.lua:9), subtask 1/1, firing its windows)" \
  "window out of memory, on_error"
finish
