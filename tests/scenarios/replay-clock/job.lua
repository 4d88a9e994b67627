-- The replay clock: records arrive at their line's processing time, which user code sees.
local weir = require("weir")

local env = weir.env()

env:replay("input.replay")
  :process(function(v, ctx, out)
    out(("%s at %d"):format(v, ctx:current_processing_time()))
  end)
  :print()

env:execute()
