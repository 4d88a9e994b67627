local weir = require("weir")
local env = weir.env{ batch_size = 16, max_parallelism = 4, auto_watermark_interval = 20 }
local s = env:kafka_source{ bootstrap_servers = weir.args[1], topics = "in",
  format = "csv", stopping_offsets = weir.args[3] and "latest" or nil,
  properties = { ["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 500,
                 ["max.partition.fetch.bytes"] = 256 },
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(r)
    return tonumber(r[2]) end) }
  :key_by(function(r) return r[1] end)
  :window(weir.windows.tumbling_event_time("1s"))
  :aggregate({ create = function() return 0 end, add = function(_, n) return n + 1 end,
    result = function(n) return n end },
    function(key, ctx, counts, out)
      out(("%s %d %d"):format(key, ctx:window().start, counts[1])) end)
s:write_text(weir.args[2])
-- stdout (a FIFO the test reads) gets long lines: the job blocks on it until the test reads
local pad = string.rep(".", 4000)
s:map(function(l) return l .. " " .. pad end):print()
env:execute()
