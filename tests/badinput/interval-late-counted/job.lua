-- An interval join's late records (below the join's watermark, the minimum of both inputs')
-- without late side outputs: dropped, counted, and the first one named. Each pair prints
-- "out:2" (it carries one record of each side), so every input line is accounted for.
local weir = require("weir")
local env = weir.env()
local lines = env:socket_text_stream("localhost", 9999) -- replaced by input.replay (expect)
local function side(tag)
  return lines
    :filter(function(l) return l:sub(1, 1) == tag end)
    :map(function(l)
      local k, t = l:match("^%a (%a+) (%d+)$")
      return { k, tonumber(t) }
    end)
    :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
      :with_timestamp_assigner(function(e) return e[2] end))
    :key_by(function(e) return e[1] end)
end
side("L"):interval_join(side("R")):between(0, 0)
  :process(function(l, r, _, out) out(("out:2 %s %d %d"):format(l[1], l[2], r[2])) end)
  :print()
env:execute("late")
