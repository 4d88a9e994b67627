-- The same failing window function with on_error: the fire goes to the error side output with
-- its key and window, and the job goes on (the other windows fire). The function prints
-- "err:K" for the K elements of the fire it is about to fail, so nothing vanishes.
local weir = require("weir")
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local w = env:replay("input.replay")
  :map(function(line)
    local k, ts = line:match("^(%S+) (%d+)$")
    return { k = k, ts = tonumber(ts) }
  end)
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(0)
    :with_timestamp_assigner(function(r) return r.ts end))
  :key_by(function(r) return r.k end)
  :window(weir.windows.tumbling_event_time("100ms"))
  :process(function(k, ctx, els, out)
    if k == "b" and ctx:window().start == 0 then
      print("err:" .. #els)
      error("boom")
    end
    out("out:" .. #els)
  end)
w:sink(function(v) print(v) end)
w:get_side_output(errors):sink(function(e)
  print(("fire-failed key=%s window=%s value=%s operator=%s error=%s"):format(e.key,
    tostring(e.window), tostring(e.value), e.operator, e.error))
end)
env:execute()
