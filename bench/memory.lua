-- Benchmark job: what an open window costs in memory. generate -> timestamps (monotonous) ->
-- key_by -> tumbling 5 s event-time windows -> aggregate (count) -> checksum sink, parallelism
-- 1. All N events fall in the window [0, 5000), so every (key, window) stays open until the
-- end of input, when all fire at once: with KEYS = N the peak holds N open windows, with
-- KEYS = 1 one window and the same events. bench/run reports (peak RSS with N keys - peak RSS
-- with 1 key) / N as bytes per open window. bench/baseline/memory.c computes the same in plain
-- C with a hash map of counters.
--
--   weir run bench/memory.lua -- N KEYS
--
-- Event i (0-based) is a Lua table { i % KEYS, floor(i * 5000 / N) }.
local weir = require("weir")

local DIGEST_MOD = 4294967296 -- 2^32

local n = tonumber(weir.args[1] or "1000000")
local keys = tonumber(weir.args[2] or tostring(n))
if not n or n < 1 or n % 1 ~= 0 or not keys or keys < 1 or keys % 1 ~= 0 then
  error("bench/memory.lua: expected a record count and a key count")
end

local floor = math.floor

local env = weir.env{ parallelism = 1 }

env:generate(function(i) return { i % keys, floor(i * 5000 / n) } end, { count = n })
  :assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(function(e) return e[2] end))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time("5s"))
  :aggregate({
    create = function() return 0 end,
    add = function(_, c) return c + 1 end,
    result = function(c) return c end,
  }, function(key, _, counts, out)
    out({ key = key, count = counts[1] })
  end)
  :sink({
    open = function(self)
      self.windows = 0
      self.events = 0
      self.digest = 0
    end,
    -- digest = sum of (key + 1) * count mod 2^32, independent of the firing order.
    sink = function(self, r)
      self.windows = self.windows + 1
      self.events = self.events + r.count
      self.digest = (self.digest + (r.key + 1) * r.count) % DIGEST_MOD
    end,
    close = function(self)
      print(("windows %d events %d digest %d"):format(self.windows, self.events, self.digest))
    end,
  })

env:execute("bench memory")
