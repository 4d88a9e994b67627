#!/usr/bin/env bash
# Trigger contract checks: bad results and bad timer times fail naming the trigger and the
# script line; --check-triggers warns about timers behind the watermark and state left after
# clear(), once per trigger, and only when asked.
. "$(dirname "$0")/lib.bash"

cat > sloppy.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:from_collection({ { "a", 1 }, { "a", 2 }, { "a", 20000 } })
  :assign_timestamps_and_watermarks(weir.watermarks.custom{
      on_event = function(_, _, ts, out) out:emit_watermark(ts) end, -- punctuated
    }:with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("10s"))
  :trigger(weir.trigger{
    name = "sloppy",
    on_element = function(_, _, _, w, ctx)
      ctx:state("seen"):set(true)
      ctx:register_event_time_timer(w:max_timestamp())
      ctx:register_event_time_timer(-5)
      return weir.CONTINUE
    end,
    on_event_time = function() return weir.FIRE end,
  })
  :process(function(_, _, e, out) out(#e) end)
  :print()
env:execute()
LUA
run_weir run sloppy.lua
expect_rc 0 "a sloppy trigger still runs"
expect_out "1
2
1
2
1" "the sloppy trigger's output"
[ ! -s err ] && ok || bad "no warnings without --check-triggers, got: $(cat err)"

run_weir run sloppy.lua --check-triggers
expect_rc 0 "--check-triggers only warns"
expect_err_has "trigger sloppy (sloppy.lua:11): registered an event-time timer at -5, already behind" "timer behind the watermark"
expect_err_has "left state \"seen\" behind after clear()" "state left after clear"
[ "$(grep -c 'behind the watermark' err)" = 1 ] && ok || bad "the warning is given once"

cat > badresult.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:from_elements("x"):key_by(function(v) return v end)
  :window(weir.windows.global())
  :trigger(weir.trigger{ name = "truthy", on_element = function() return true end })
  :process(function() end)
env:execute()
LUA
run_weir run badresult.lua
expect_rc 1 "a bad trigger result fails the job"
expect_err_has "trigger truthy (badresult.lua:5): on_element returned true, not a trigger result" "bad result names the trigger and line"

cat > badtime.lua <<'LUA'
local weir = require("weir")
local env = weir.env()
env:from_elements("x"):key_by(function(v) return v end)
  :window(weir.windows.global())
  :trigger(weir.trigger{ name = "nilt", on_element = function(_, _, _, _, ctx)
    ctx:register_event_time_timer(nil)
    return weir.CONTINUE
  end })
  :process(function() end)
env:execute()
LUA
run_weir run badtime.lua
expect_rc 1 "a timer at a non-number fails the job"
expect_err_has "badtime.lua:6: trigger nilt: register_event_time_timer was given nil, not a number of milliseconds" "bad time names the trigger and line"

cat > nomethod.lua <<'LUA'
local weir = require("weir")
local _ = weir.trigger{ on_event_time = function() return weir.FIRE end }
LUA
run_weir run nomethod.lua
expect_rc 1 "a trigger without on_element fails at build"
expect_err_has "nomethod.lua:2: weir.trigger: on_element is required" "missing method named"

finish
