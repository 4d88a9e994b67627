-- on_error set but no one reads the side output: a failing fire is printed on stderr with its
-- key and window, and counted at the end; the job goes on.
local weir = require("weir")
local env = weir.env{ on_error = weir.output_tag("errors") }
env:from_collection({ 1, 2, 150 })
  :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
    :with_timestamp_assigner(function(v) return v end))
  :key_by(function(v) return v % 2 == 0 and "even" or "odd" end)
  :window(weir.windows.tumbling_event_time("100ms"))
  :process(function(k, _, els, out)
    if k == "even" then
      print("err:" .. #els)
      error("boom")
    end
    out("out:" .. #els)
  end)
  :sink(function(v) print(v) end)
env:execute()
