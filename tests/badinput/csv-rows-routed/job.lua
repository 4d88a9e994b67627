-- Malformed CSV rows with a header into Lua tables, errors routed: a row with another number of
-- fields than the header, bad quotes; each names the line (and the column).
local weir = require("weir")
local bad = require("badinput")
local errors = weir.output_tag("errors")
local text = table.concat({
  "user,ts", "ann,1", "bob", "a,b,c", '"open,2', '"x"y,3', 'q"uote,4', '"ok ""q""",5', ",",
  "", "\0,6",
}, "\r\n") .. "\r\n"
local env = weir.env{ on_error = errors }
local s = env:read_text_file(bad.file(text), { format = "csv", header = true })
s:map(function(r) return ("out %q %q"):format(r.user, r.ts) end):print()
s:get_side_output(errors):map(function(e) return "err " .. e.error end):print()
env:execute()
bad.cleanup()
