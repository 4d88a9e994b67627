-- count_window(3) fires every 3 elements of a key and purges them; count_window(3, 2) fires
-- every 2 elements over the last 3 (a count evictor), and nothing is ever purged.
local weir = require("weir")

local env = weir.env{ parallelism = 1 }

local keyed = env:from_collection({ 1, 2, 3, 4, 5, 6, 7 })
  :key_by(function() return "k" end)

local function show(label)
  return function(_, _, elements, out)
    out(label .. ": " .. table.concat(elements, " "))
  end
end

keyed:count_window(3):apply(show("tumble")):print()
keyed:count_window(3, 2):apply(show("slide")):print()

env:execute()
