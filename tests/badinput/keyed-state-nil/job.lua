-- A list state given nil: the record fails naming the state and the user's line.
local weir = require("weir")
local env = weir.env()
env:from_collection({ "a" })
  :key_by(function(v) return v end)
  :process({
    open = function(self, rt) self.seen = rt:list_state("seen") end,
    process = function(self) self.seen:add(nil) end,
  })
  :print()
env:execute()
