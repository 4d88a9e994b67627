-- Only the Lua heap grows: a map keeps every record in a table of its own. With
-- max_memory = "48m" the job fails when the heap reaches the limit; close() runs and the
-- output printed before is flushed.
local weir = require("weir")
local env = weir.env{ max_memory = "48m" }
env:generate(function(i) return i end)
  :map({
    kept = {},
    map = function(self, i)
      self.kept[#self.kept + 1] = { i, "record " .. i }
      return i
    end,
    close = function(self) print("closed after " .. #self.kept .. " kept") end,
  })
  :filter(function(i) return i % 100000 == 0 end)
  :map(function(i) return "out " .. i end)
  :print()
env:execute()
