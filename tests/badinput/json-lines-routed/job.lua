-- Malformed JSON lines into Lua tables, errors routed to on_error: each bad line is one error
-- naming the line, the column and what was expected; the good ones are records.
local weir = require("weir")
local bad = require("badinput")
local errors = weir.output_tag("errors")
local text = table.concat({
  '{"a":1}', '{"a":1,}', '{"a" 1}', '[1,2', '{"a":tru}', '"\255"', "", "  ", '{"a":1} x',
  '{"a":"\\q"}', "01", "1e999", '"\1"', "\0", '{"a":[1,{"b":null}]}', "nan",
}, "\n") .. "\n"
local env = weir.env{ on_error = errors }
local s = env:read_text_file(bad.file(text), { format = "json" })
s:map(function(v) return "out " .. weir.json.encode(v) end):print()
s:get_side_output(errors):map(function(e) return "err " .. e.error end):print()
env:execute()
bad.cleanup()
