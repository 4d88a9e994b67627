-- Rich functions: open() runs once per subtask with its runtime context, and self is per
-- subtask, so each subtask counts its own records.
local weir = require("weir")

local env = weir.env{ parallelism = 2 }

env:from_elements("a", "b", "c", "d", "e")
  :map({
    open = function(self, rt)
      self.seen = 0
      self.me = ("%d/%d %s"):format(rt:subtask_index(), rt:parallelism(), rt:job_name())
    end,
    map = function(self, v)
      self.seen = self.seen + 1
      return { self.me, v, self.seen }
    end,
    close = function(self)
      print(("closed %s after %d"):format(self.me, self.seen))
    end,
  })
  :print()

env:execute("rich")
