-- JSON lines into typed records with bad members, errors routed: each names the line and the
-- field (a wrong kind, missing, twice, too long, out of range) or the column of a syntax error.
local weir = require("weir")
local bad = require("badinput")
local click = weir.record_type("bad_click", { "string[8] user", "int32_t n", "double ts" })
local errors = weir.output_tag("errors")
local text = table.concat({
  '{"user":"ann","n":1,"ts":5}', '{"user":1,"n":1,"ts":5}', '{"user":"a","n":1.5,"ts":5}',
  '{"user":"a","n":3000000000,"ts":5}', '{"user":"a","ts":5}', '{"user":"a","n":1,"ts":null}',
  '{"user":"123456789","n":1,"ts":5}', '{"user":"a","user":"b","n":1,"ts":5}', "[1]", "{",
  '{"user":"a\\u0000","n":1,"ts":5}', '{"n":2,"ts":6,"user":"bob","x":{"y":[]}}',
}, "\n") .. "\n"
local env = weir.env{ on_error = errors }
local s = env:read_text_file(bad.file(text), { format = "json", record = click })
s:map(function(r) return ("out %s %d %s"):format(r.user, r.n, tostring(r.ts)) end):print()
s:get_side_output(errors):map(function(e) return "err " .. e.error end):print()
env:execute()
bad.cleanup()
