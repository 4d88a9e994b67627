-- Benchmark job: read_text_file -> map (the line's key field, parsed in Lua) -> filter (even
-- keys) -> sink, parallelism 1: the plain text path with no event time, a Lua string per line.
-- The sink counts and sums the keys it gets. bench/baseline/text_mf.c and bench/peer/text_mf.lua
-- (a LuaJIT io.lines loop) compute the same.
--
--   weir run bench/text_mf.lua -- FILE      FILE of "key,ts" lines (bench/run writes it)
local weir = require("weir")

local path = weir.args[1]
if not path then
  error("bench/text_mf.lua: expected the path of the input file")
end

local tonumber, find, sub = tonumber, string.find, string.sub

local env = weir.env{ parallelism = 1 }

env:read_text_file(path)
  :map(function(line) return tonumber(sub(line, 1, find(line, ",", 1, true) - 1)) end)
  :filter(function(k) return k % 2 == 0 end)
  :sink({
    open = function(self)
      self.n = 0
      self.sum = 0
    end,
    sink = function(self, k)
      self.n = self.n + 1
      self.sum = self.sum + k
    end,
    close = function(self)
      print(("count %d sum %d"):format(self.n, self.sum))
    end,
  })

env:execute("bench text_mf")
