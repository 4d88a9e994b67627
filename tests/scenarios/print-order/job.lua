-- print() in user code and print sinks share one stdout, in program order: a chained sink
-- prints inside the call that emits to it.
local weir = require("weir")

local env = weir.env{ parallelism = 1 }

env:from_collection({ 1, 2, 3 })
  :flat_map(function(n, out)
    print("before " .. n)
    out(n * 10)
    print("after " .. n)
  end)
  :print()

env:execute()
