-- A keyed job started again in the same session (:stop, :start; :reset, :start) makes its
-- keyed state again in open(): it starts empty and takes records (it once failed at the
-- first record, "keyed state is full").
local weir = require("weir")
local env = weir.env()
env:manual()
  :map(function(line) local k, v = line:match("^(%w+),(%d+)$") return { k, tonumber(v) } end)
  :key_by(function(e) return e[1] end)
  :process({
    open = function(self, rt) self.sum = rt:value_state("sum") end,
    process = function(self, e, _, out)
      local s = (self.sum:value() or 0) + e[2]
      self.sum:update(s)
      out(e[1] .. "=" .. s)
    end,
  })
  :print()
env:execute()
