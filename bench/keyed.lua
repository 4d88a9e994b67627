-- Benchmark job: generate -> timestamps (monotonous) -> key_by -> keyed process with value
-- state (numbers: kept in C) and one event-time timer per key -> checksum sink, parallelism 1
-- (one core). Per key the process function counts the records of the key's current 5 s period
-- (states "period" and "count") with a timer at the period's end; a record of a later period
-- emits the finished period at once and moves the timer, and a timer that fires emits the last
-- one. Each (key, period, count) comes out once, whenever the periodic (wall-clock)
-- watermarks happen to fire the timers, so the output does not depend on them.
-- bench/baseline/keyed.c computes the same in plain C, and bench/run checks that both print the
-- same line before it compares their times.
--
--   weir run bench/keyed.lua -- N
--
-- Events as bench/windows.lua's: key i % 10000, timestamp floor(i / 10) ms, typed records;
-- about 5 records per (key, period), so one record in 5 emits and moves its key's timer.
local weir = require("weir")
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local KEYS = 10000
local PERIOD_MS = 5000

local n = common.record_count("bench/keyed.lua", "10000000")
local floor = math.floor
local ev = weir.record_type("ev", { "int32_t key", "double ts" })
local res = weir.record_type("res", { "int32_t key", "double start", "int32_t count" })

local env = weir.env{ parallelism = 1, auto_watermark_interval = common.WATERMARK_INTERVAL }

env:generate(function(i) return ev(i % KEYS, floor(i / 10)) end, { count = n })
  :assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(function(e) return e.ts end))
  :key_by(function(e) return e.key end)
  :process({
    open = function(self, rt)
      self.period = rt:value_state("period")
      self.count = rt:value_state("count")
    end,
    process = function(self, e, ctx, out)
      local ts = ctx:timestamp()
      local p = ts - ts % PERIOD_MS
      local cur = self.period:value()
      if cur == p then
        self.count:update(self.count:value() + 1)
        return
      end
      local timers = ctx:timer_service()
      if cur then
        out(res(e.key, cur, self.count:value()))
        timers:delete_event_time_timer(cur + PERIOD_MS - 1)
      end
      self.period:update(p)
      self.count:update(1)
      timers:register_event_time_timer(p + PERIOD_MS - 1)
    end,
    on_timer = function(self, _, ctx, out)
      out(res(ctx:current_key(), self.period:value(), self.count:value()))
      self.period:clear()
      self.count:clear()
    end,
  })
  :sink(common.checksum_sink(function(r)
    return (r.key + 1) * (r.start / PERIOD_MS + 1) * r.count
  end))

env:execute("bench keyed")
