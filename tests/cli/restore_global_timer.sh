#!/usr/bin/env bash
# A restore whose timers include one at +inf (docs/API.md, Checkpoints): a global window's end,
# where a trigger on global() registers its window's max timestamp (as continuous_event_time
# does). Restoring such a state once looped forever (weir.winckpt's timer merge took +inf for
# "no other subtask's timer"); --verify-checkpoints restores every checkpoint it takes, so the
# job hung at its first one. Now it gives the uninterrupted run's output. (A hang is killed:
# a Lua loop does not see SIGTERM.)
. "$(dirname "$0")/lib.bash"

cat > job.lua <<'LUA'
local weir = require("weir")
local env = weir.env{}
local at_end = weir.trigger{
  name = "at_end",
  on_element = function(_, _, _, w, ctx)
    ctx:register_event_time_timer(w:max_timestamp())
    return weir.CONTINUE
  end,
  on_event_time = function() return weir.FIRE end,
}
env:from_collection({ { "a", 1, 0 }, { "b", 2, 10 }, { "a", 3, 20 } })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(e) return e[3] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.global()):trigger(at_end)
  :reduce(function(a, b) return { a[1], a[2] + b[2], b[3] } end)
  :sink(function(v) print(v[1], v[2]) end)
env:execute()
LUA

timeout -s KILL 120 "$WEIR" run job.lua > plain.out 2> plain.err
rc=$?
expect_rc 0 "the job"
printf 'a\t4\nb\t2\n' > want
cmp -s plain.out want && ok || bad "the job's output: $(cat plain.out)"

timeout -s KILL 120 "$WEIR" run --verify-checkpoints job.lua > "$TMP/out" 2> "$TMP/err"
rc=$?
expect_rc 0 "--verify-checkpoints (restores a timer at +inf)"
expect_out "$(cat want)" "--verify-checkpoints"

finish
