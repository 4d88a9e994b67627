-- A fire driven by a record (count trigger on a global window) whose window function fails,
-- with on_error: the side output record holds that record as value, with key and window.
local weir = require("weir")
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local w = env:from_collection({ 1, 2, 3, 4, 5, 6 })
  :key_by(function(v) return v % 2 == 0 and "even" or "odd" end)
  :window(weir.windows.global())
  :trigger(weir.triggers.purging(weir.triggers.count(3)))
  :process(function(k, _, els, out)
    if k == "even" then
      print("err:" .. #els)
      error("boom")
    end
    out("out:" .. #els)
  end)
w:sink(function(v) print(v) end)
w:get_side_output(errors):sink(function(e)
  print(("fire-failed key=%s window=%s value=%s error=%s"):format(e.key, tostring(e.window),
    tostring(e.value), e.error))
end)
env:execute()
