-- Watermark alignment (API.md): a replayed input 200 s ahead in event time of a generated one
-- (both 10 records a second of the virtual clock). The fast one is paused until the slow one
-- is within 10 s of it, so its windows do not pile up waiting for the slow watermark; the
-- results are those of the job without alignment. An update every second; the slow input
-- ends first (at 80 s of event time) and leaves the group, which lets the fast one go.
local weir = require("weir")
local env = weir.env()
local function strategy()
  return weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return tonumber(v:match(",(%d+)$")) end)
    :with_watermark_alignment("clicks", "10s")
end
local slow = env:generate(function(i) return ("slow,%d"):format((i + 1) * 1000) end,
  { count = 80, rate = 10 }):assign_timestamps_and_watermarks(strategy())
local fast = env:replay("input.replay"):assign_timestamps_and_watermarks(strategy())
local most = 0
slow:union(fast)
  :key_by(function(v) return v:match("^(%a+),") end)
  :window(weir.windows.tumbling_event_time("20s"))
  :aggregate({ create = function() return 0 end, add = function(_, n) return n + 1 end,
               result = function(n) return n end },
    function(k, ctx, counts, out)
      local open = 0
      for _, op in ipairs(env:status().operators) do
        for _, sub in ipairs(op.subtasks) do
          open = open + (sub.open_windows or 0)
        end
      end
      most = math.max(most, open)
      out(("%s [%d, %d): %d"):format(k, ctx:window().start, ctx:window().stop, counts[1]))
    end)
  :print()
env:execute()
local st = env:status() -- nil in the REPL, where execute() only hands the job over
for _, m in ipairs(st and st.alignment.groups[1].members or {}) do
  print(("%s: paused %d time(s)"):format(m.input:match("reading (%a+)"), m.pauses))
end
if st then
  print(("at most %d open window(s) when one fired"):format(most))
end
