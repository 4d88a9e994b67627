-- A key tuple nested 1000 deep: refused at key_by (tuples nest at most 32 deep), naming it.
local weir = require("weir")
local key = "x"
for _ = 1, 1000 do
  key = { key }
end
local env = weir.env()
env:from_collection({ 1, 2 })
  :key_by(function() return key end)
  :map(function(v) return "out " .. v end)
  :print()
env:execute()
