-- Benchmark job: generate -> timestamps (monotonous) -> key_by -> tumbling 5 s event-time
-- windows -> aggregate (count) -> sink, parallelism 1 (one core). The sink keeps an
-- order-independent checksum of every fired (key, window, count), so the output does not depend
-- on when the periodic (wall-clock) watermarks happen to fire the windows.
-- bench/baseline/windows.c computes the same in plain C, and bench/run checks that both print
-- the same line before it compares their times.
--
--   weir run bench/windows.lua -- N typed|table|custom
--
-- Event i (0-based) has key i % 10000 and timestamp floor(i / 10) ms: 10 events per ms, so
-- 10M events span 1,000 s of event time = 200 windows of 5 s, each window holds 50,000 events
-- and each (key, window) about 5 (the ten events of one ms have ten different keys).
-- "typed": events are weir.record_type cdata and so are the window results; "table": both are
-- Lua tables; "custom": tables, with the built-in event_time() trigger replaced by the same
-- trigger written in Lua with weir.trigger{} (what a custom trigger costs per element).
-- Events arrive in timestamp order, so no record is late.
local weir = require("weir")

local KEYS = 10000
local WINDOW_MS = 5000
local DIGEST_MOD = 4294967296 -- 2^32

local n = tonumber(weir.args[1] or "10000000")
local variant = weir.args[2] or "typed"
if not n or n < 0 or n % 1 ~= 0 then
  error(("bench/windows.lua: expected a record count, got %q"):format(tostring(weir.args[1])))
end
if variant ~= "typed" and variant ~= "table" and variant ~= "custom" then
  error(("bench/windows.lua: expected typed, table or custom, got %q"):format(variant))
end

local floor = math.floor
local make_event, event_key, event_ts, make_result
if variant == "typed" then
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

local env = weir.env{ parallelism = 1 }

env:generate(make_event, { count = n })
  :assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(event_ts))
  :key_by(event_key)
  :window(weir.windows.tumbling_event_time("5s"))
  :trigger(variant == "custom" and custom_event_time or weir.triggers.event_time())
  :aggregate({
    create = function() return 0 end,
    add = function(_, c) return c + 1 end,
    result = function(c) return c end,
  }, function(key, ctx, counts, out)
    out(make_result(key, ctx:window().start, counts[1]))
  end)
  :sink({
    open = function(self)
      self.windows = 0
      self.events = 0
      self.digest = 0
    end,
    -- digest = sum of (key + 1) * (window index + 1) * count mod 2^32; each term is exact in a
    -- double (about N at most: key < 10^4, index < N / 50,000, count ~5), so the sum does not
    -- depend on the order windows fire in.
    sink = function(self, r)
      self.windows = self.windows + 1
      self.events = self.events + r.count
      local term = (r.key + 1) * (r.start / WINDOW_MS + 1) * r.count
      self.digest = (self.digest + term) % DIGEST_MOD
    end,
    close = function(self)
      print(("windows %d events %d digest %d"):format(self.windows, self.events, self.digest))
    end,
  })

env:execute("bench windows " .. variant)
