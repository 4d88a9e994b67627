-- The REPL's :status with watermark alignment: the fast replay (200 s ahead in event time) is
-- paused at the first update (1 s) and :status says why.
local weir = require("weir")
local env = weir.env()
local function input(name)
  return env:replay(name .. ".replay")
    :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
      :with_timestamp_assigner(function(v) return tonumber(v:match(",(%d+)$")) end)
      :with_watermark_alignment("clicks", "10s"))
end
input("slow"):union(input("fast"))
  :key_by(function(v) return v:match("^(%a+),") end)
  :window(weir.windows.tumbling_event_time("10s"))
  :aggregate({ create = function() return 0 end, add = function(_, n) return n + 1 end,
               result = function(n) return n end })
  :print()
env:execute("alignment")
