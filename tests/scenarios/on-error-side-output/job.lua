-- weir.env{ on_error = tag } routes a failing record, with its error, to that side output of
-- the operator that failed, and the job goes on.
local weir = require("weir")

local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }

local parsed = env:socket_text_stream("localhost", 9999)
  :map(function(line)
    local key, n = line:match("^(%w+),(%d+)$")
    if not key then error("not key,number: " .. line) end
    return { key, tonumber(n) }
  end)

parsed:print("ok")
parsed:get_side_output(errors)
  :map(function(e) return { e.operator, e.value, e.error } end)
  :print("bad")

env:execute()
