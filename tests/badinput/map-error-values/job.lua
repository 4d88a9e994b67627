-- Error values that are not strings, routed with on_error: error(nil), error({}), a table, an
-- object whose __tostring fails and one whose __tostring works. Each becomes a readable error.
local weir = require("weir")
local errors = weir.output_tag("errors")
local values = {
  [2] = { v = nil },
  [3] = { v = {} },
  [4] = { v = { code = 5 } },
  [5] = { v = setmetatable({}, { __tostring = error }) },
  [6] = { v = setmetatable({}, { __tostring = function() return "custom error" end }) },
}
local env = weir.env{ on_error = errors }
local s = env:from_collection({ 1, 2, 3, 4, 5, 6, 7 })
  :map(function(n)
    if values[n] then
      error(values[n].v)
    end
    return "out " .. n
  end)
s:print()
s:get_side_output(errors):map(function(e) return "err " .. e.value .. ": " .. e.error end):print()
env:execute()
