-- A parallelism-1 source feeding parallelism 2 goes round-robin from subtask 0; a sink of
-- parallelism 1 prints no prefix, and print("id") prints "id> ".
local weir = require("weir")

local env = weir.env{ parallelism = 2 }

local upper = env:socket_text_stream("localhost", 9999)
  :map(function(line) return line:upper() end)

upper:print()
upper:print("up")
upper:print("one"):set_parallelism(1)

env:execute("rebalance")
