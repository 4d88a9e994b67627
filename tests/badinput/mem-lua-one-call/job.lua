-- One call builds a table without end: the allocation that would pass max_memory is refused
-- inside the user function. That fails the job (it is not the record's error, so on_error
-- does not route it); close() runs and the record printed before is flushed.
local weir = require("weir")
local errors = weir.output_tag("errors")
local env = weir.env{ max_memory = "48m", on_error = errors }
local s = env:from_collection({ 1, 2, 3 })
  :map({
    map = function(_, i)
      if i == 2 then
        local t = {}
        for j = 1, 1e10 do
          t[j] = { j }
        end
        print("never reached: " .. #t)
      end
      return "out " .. i
    end,
    close = function() print("closed") end,
  })
s:print()
s:get_side_output(errors):map(function(e) return "err " .. e.error end):print()
env:execute()
