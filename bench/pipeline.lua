-- Benchmark job: generate -> map -> key_by -> sink at parallelism 2; per subtask the count and
-- sum of what arrived. bench/baseline/pipeline.c computes the same in plain C, and bench/run
-- checks that both print the same lines before it compares their times.
--
--   weir run bench/pipeline.lua -- N        N records (default 10000000)
local weir = require("weir")

local n = tonumber(weir.args[1] or "10000000")
if not n or n < 0 or n % 1 ~= 0 then
  error(("bench/pipeline.lua: expected a record count, got %q"):format(tostring(weir.args[1])))
end

local env = weir.env{ parallelism = 2 }

env:generate(function(i) return i end, { count = n })
  :map(function(i) return i % 1024 end)
  :key_by(function(k) return k end)
  :sink({
    open = function(self, rt)
      self.index = rt:subtask_index()
      self.n = 0
      self.sum = 0
    end,
    sink = function(self, v)
      self.sum = self.sum + v
      self.n = self.n + 1
    end,
    close = function(self)
      print(("subtask %d count %d sum %d"):format(self.index, self.n, self.sum))
    end,
  })

env:execute("bench pipeline")
