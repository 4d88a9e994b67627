-- Benchmark job: generate -> sink, parallelism 1: the smallest job, what the source driver and
-- one operator call cost per record. The sink counts and sums what arrives.
-- bench/baseline/gen_sink.c and bench/peer/gen_sink.lua (a LuaJIT loop) compute the same.
--
--   weir run bench/gen_sink.lua -- N        N records (default 10000000)
local weir = require("weir")
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local n = common.record_count("bench/gen_sink.lua", "10000000")

local env = weir.env{ parallelism = 1 }

env:generate(function(i) return i end, { count = n })
  :sink({
    open = function(self)
      self.n = 0
      self.sum = 0
    end,
    sink = function(self, v)
      self.n = self.n + 1
      self.sum = self.sum + v
    end,
    close = function(self)
      print(("count %d sum %d"):format(self.n, self.sum))
    end,
  })

env:execute("bench gen_sink")
