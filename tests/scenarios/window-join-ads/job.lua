-- Ad impressions and clicks in 10 s tumbling event-time windows: a window join pairs every
-- impression of an ad with every click on it in the same window (impressions outer, clicks
-- inner, each in arrival order), and a co_group gives per ad and window the impressions and
-- clicks, either possibly none. Results carry the window's max timestamp. Each input has its
-- own watermark (2 s out of orderness); a window fires when the smaller passes its end.
local weir = require("weir")

local env = weir.env()
local lines = env:socket_text_stream("localhost", 9999)

local function events(kind)
  return lines
    :filter(function(line) return line:match("^" .. kind .. " ") ~= nil end)
    :map(function(line)
      local ad, t = line:match("^%a+ (%S+) (%d+)$")
      return { ad = ad, ts = tonumber(t) }
    end)
    :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness("2s")
      :with_timestamp_assigner(function(e) return e.ts end))
end

local impressions, clicks = events("imp"), events("click")
local function ad(e) return e.ad end

impressions:join(clicks):where(ad):equal_to(ad)
  :window(weir.windows.tumbling_event_time("10s"))
  :apply(function(i, c) return ("join %s: shown %d, clicked %d"):format(i.ad, i.ts, c.ts) end)
  :process(function(v, ctx, out) out(("%s (at %d)"):format(v, ctx:timestamp())) end)
  :print()

impressions:co_group(clicks):where(ad):equal_to(ad)
  :window(weir.windows.tumbling_event_time("10s"))
  :apply(function(key, shown, clicked, out)
    out(("co_group %s: %d shown, %d clicked"):format(key, #shown, #clicked))
  end)
  :process(function(v, ctx, out) out(("%s (at %d)"):format(v, ctx:timestamp())) end)
  :print()

env:execute()
