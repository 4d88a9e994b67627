-- CSV rows through a header into typed records, errors routed: a field that is not its type,
-- a string over its bound, a wrong count; from a replay, so Lua parses the lines (the same C).
local weir = require("weir")
local bad = require("badinput")
local row = weir.record_type("bad_row", { "int32_t id", "string[3] name", "double price" })
local errors = weir.output_tag("errors")
local text = table.concat({
  "+0 name,id,price", "+0 abc,1,2.5", "+0 abcd,2,1", "+0 a,x,1", "+0 a,3,", "+0 a,4",
  '+0 "a,b",5,6', "+0 a,99999999999,1", "+0 b,7, 8 ",
}, "\n") .. "\n"
local env = weir.env{ on_error = errors }
local s = env:replay(bad.file(text), { format = "csv", header = true, record = row })
s:map(function(r) return ("out %d %s %s"):format(r.id, r.name, tostring(r.price)) end):print()
s:get_side_output(errors):map(function(e) return "err " .. e.error end):print()
env:execute()
bad.cleanup()
