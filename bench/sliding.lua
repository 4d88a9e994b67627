-- Benchmark job: generate -> timestamps (monotonous) -> key_by (10,000 keys) -> sliding
-- event-time windows of 60 s every 1 s -> aggregate (count) -> checksum sink, parallelism 1
-- (one core). bench/baseline/sliding.c computes the same in plain C; bench/run checks that both
-- print the same line before it compares their times.
--
--   weir run bench/sliding.lua -- N
--
-- Events are Lua tables { key, ts } made by the generator: event i (0-based) has key i % 10000
-- and timestamp floor(i / 10) ms, as in bench/windows.lua. Each key so gets one event per
-- second, every event lies in 60 windows, and each (key, window) counts about 60 events.
local weir = require("weir")

local KEYS = 10000
local SLIDE_MS = 1000
local DIGEST_MOD = 4294967296 -- 2^32

local n = tonumber(weir.args[1] or "1000000")
if not n or n < 0 or n % 1 ~= 0 then
  error(("bench/sliding.lua: expected a record count, got %q"):format(tostring(weir.args[1])))
end

local floor = math.floor

local env = weir.env{ parallelism = 1 }

env:generate(function(i) return { i % KEYS, floor(i / 10) } end, { count = n })
  :assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.sliding_event_time("60s", "1s"))
  :aggregate({
    create = function() return 0 end,
    add = function(_, c) return c + 1 end,
    result = function(c) return c end,
  }, function(key, ctx, counts, out)
    out({ key = key, start = ctx:window().start, count = counts[1] })
  end)
  :sink({
    open = function(self)
      self.windows = 0
      self.events = 0
      self.digest = 0
    end,
    -- digest = sum of (key + 1) * (start / 1000 + 60) * count mod 2^32: window starts are
    -- >= -59 s, so every term is positive and exact in a double, and the sum does not depend
    -- on the order windows fire in.
    sink = function(self, r)
      self.windows = self.windows + 1
      self.events = self.events + r.count
      local term = (r.key + 1) * (r.start / SLIDE_MS + 60) * r.count
      self.digest = (self.digest + term) % DIGEST_MOD
    end,
    close = function(self)
      print(("windows %d events %d digest %d"):format(self.windows, self.events, self.digest))
    end,
  })

env:execute("bench sliding")
