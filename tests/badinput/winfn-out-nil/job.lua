-- An apply function that emits nil: the job fails naming the operator, key and window.
local weir = require("weir")
local env = weir.env()
env:from_collection({ 1, 2, 150 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function(v) return v % 2 == 0 and "even" or "odd" end)
  :window(weir.windows.tumbling_event_time("100ms"))
  :apply(function(_, w, els, out)
    if w.start == 100 then
      out(nil)
    end
    out("out:" .. #els)
  end)
  :sink(function(v) print(v) end)
env:execute()
