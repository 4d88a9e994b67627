-- Two replay sources share one virtual clock; lines due at the same time come in the order
-- the sources were declared, and each file's "+" counts from its own previous line.
local weir = require("weir")

local env = weir.env()

local left = env:replay("left.replay")
local right = env:replay("right.replay")
left:union(right)
  :process(function(v, ctx, out)
    out(("%d %s"):format(ctx:current_processing_time(), v))
  end)
  :print()

env:execute()
