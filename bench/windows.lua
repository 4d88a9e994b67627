-- Benchmark job: generate -> timestamps (monotonous) -> key_by -> tumbling 5 s event-time
-- windows -> aggregate (count) -> sink, parallelism 1 (one core). The sink keeps an
-- order-independent checksum of every fired (key, window, count), so the output does not depend
-- on when the periodic (wall-clock) watermarks happen to fire the windows.
-- bench/baseline/windows.c computes the same in plain C, and bench/run checks that both print
-- the same line before it compares their times.
--
--   weir run bench/windows.lua -- N typed|table|custom|agg
--
-- Event i (0-based) has key i % 10000 and timestamp floor(i / 10) ms: 10 events per ms, so
-- 10M events span 1,000 s of event time = 200 windows of 5 s, each window holds 50,000 events
-- and each (key, window) about 5 (the ten events of one ms have ten different keys).
-- "typed": events are weir.record_type cdata and so are the window results; "table": both are
-- Lua tables; "custom": tables, with the built-in event_time() trigger replaced by the same
-- trigger written in Lua with weir.trigger{} (what a custom trigger costs per element); "agg":
-- typed events counted by the built-in weir.aggregates.count() with no window function (computed
-- in C; each fired window emits a weir.aggregates.window_result record: key, start, stop, value).
-- Events arrive in timestamp order, so no record is late.
local weir = require("weir")
-- bench/common.lua, found by this file's directory (see there)
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local KEYS = 10000
local WINDOW_MS = 5000

local n = common.record_count("bench/windows.lua", "10000000")
local variant = weir.args[2] or "typed"
if variant ~= "typed" and variant ~= "table" and variant ~= "custom" and variant ~= "agg" then
  error(("bench/windows.lua: expected typed, table, custom or agg, got %q"):format(variant))
end

local floor = math.floor
local make_event, event_key, event_ts, make_result
if variant == "typed" or variant == "agg" then
  local ev = weir.record_type("ev", { "int32_t key", "double ts" })
  local res = weir.record_type("res", { "int32_t key", "double start", "int32_t count" })
  make_event = function(i) return ev(i % KEYS, floor(i / 10)) end
  event_key = function(e) return e.key end
  event_ts = function(e) return e.ts end
  make_result = function(key, start, count) return res(key, start, count) end
else
  make_event = function(i) return { i % KEYS, floor(i / 10) } end
  event_key = function(e) return e[1] end
  event_ts = function(e) return e[2] end
  make_result = function(key, start, count) return { key = key, start = start, count = count } end
end

-- Flink's EventTimeTrigger, as a user would write it.
local custom_event_time = weir.trigger{
  name = "custom event_time",
  on_element = function(_, _, _, window, ctx)
    local m = window:max_timestamp()
    if m <= ctx:current_watermark() then
      return weir.FIRE
    end
    ctx:register_event_time_timer(m)
    return weir.CONTINUE
  end,
  on_event_time = function(_, time, window)
    return time == window:max_timestamp() and weir.FIRE or weir.CONTINUE
  end,
  clear = function(_, window, ctx)
    ctx:delete_event_time_timer(window:max_timestamp())
  end,
}

-- The checksum sink's digest term of a fired window, (key + 1) * (window index + 1) * count:
-- about N at most (key < 10^4, index < N / 50,000, count ~5).
local function digest_term(r)
  return (r.key + 1) * (r.start / WINDOW_MS + 1) * r.count
end

local env = weir.env{ parallelism = 1, auto_watermark_interval = common.WATERMARK_INTERVAL }

local windowed = env:generate(make_event, { count = n })
  :assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(event_ts))
  :key_by(event_key)
  :window(weir.windows.tumbling_event_time("5s"))
if variant == "agg" then
  -- the window_result records: value is the count
  windowed:aggregate(weir.aggregates.count())
    :sink(common.checksum_sink(function(r)
      return (r.key + 1) * (r.start / WINDOW_MS + 1) * r.value
    end, nil, "value"))
else
  windowed:trigger(variant == "custom" and custom_event_time or weir.triggers.event_time())
    :aggregate(common.count(), function(key, ctx, counts, out)
      out(make_result(key, ctx:window().start, counts[1]))
    end)
    :sink(common.checksum_sink(digest_term))
end

env:execute("bench windows " .. variant)
