-- An error in user code fails the job (exit 1), naming the operator, the script line and the
-- record.
local weir = require("weir")

local env = weir.env{ parallelism = 2 }

env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local n = tonumber(line)
    return n * 2
  end)
  :print()

env:execute()
