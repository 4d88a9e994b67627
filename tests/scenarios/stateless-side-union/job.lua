-- process() with a side output, flat_map, filter and union, at parallelism 2.
local weir = require("weir")

local env = weir.env{ parallelism = 2 }
local long = weir.output_tag("long")

local words = env:socket_text_stream("localhost", 9999)
  :flat_map(function(line, out)
    for w in line:gmatch("%S+") do out(w) end
  end)
  :process(function(w, ctx, out)
    if #w > 4 then ctx:output(long, { "long", w }) end
    out(w)
  end)

local short = words:filter(function(w) return #w <= 2 end)
short:union(words:get_side_output(long)):print()

env:execute()
