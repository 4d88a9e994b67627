-- A process window function that fails in a fire driven by a watermark mid-stream: the job
-- fails naming the operator (script line), subtask, key, window, the watermark, the user's line.
local weir = require("weir")
local env = weir.env()
env:replay("input.replay")
  :map(function(line)
    local k, ts = line:match("^(%S+) (%d+)$")
    return { k = k, ts = tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(0)
    :with_timestamp_assigner(function(r) return r.ts end))
  :key_by(function(r) return r.k end)
  :window(weir.windows.tumbling_event_time("100ms"))
  :process(function(k, _, els, out)
    if k == "b" then
      error("boom")
    end
    out("out:" .. #els)
  end)
  :sink(function(v) print(v) end)
env:execute()
