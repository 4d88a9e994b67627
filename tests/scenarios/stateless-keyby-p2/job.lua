-- Keys a, b, c at parallelism 2 land on the subtasks Flink picks (key groups): a -> 2>, b, c -> 1>.
local weir = require("weir")

local env = weir.env{ parallelism = 2 }

env:socket_text_stream("localhost", 9999)
  :key_by(function(w) return w end)
  :map(function(w) return { w, #w } end)
  :print()

env:execute("keyed words")
