-- Typed lines with bad fields, errors routed to on_error: each bad line is one error naming the
-- line and field; the good ones are records.
local weir = require("weir")
local bad = require("badinput")
local ev = weir.record_type("bad_ev", { "int32_t key", "double ts" })
local errors = weir.output_tag("errors")
local text = table.concat({
  "1,1000", "x,1", "%s%n%x,2", "3,\0", "4,1e999", "2147483648,5", "6,nan", "7,inf",
  "0x10,8", "9", "10,11,12", "", "-5,2.5",
}, "\n") .. "\n"
local env = weir.env{ on_error = errors }
local s = env:read_text_file(bad.file(text), { record = ev })
s:map(function(r) return ("out %d %s"):format(r.key, tostring(r.ts)) end):print()
s:get_side_output(errors):map(function(e) return "err " .. e.error end):print()
env:execute()
bad.cleanup()
