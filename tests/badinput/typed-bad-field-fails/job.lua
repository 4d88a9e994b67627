-- A typed line with a bad field, no on_error: the job fails naming the source, line and field.
local weir = require("weir")
local bad = require("badinput")
local ev = weir.record_type("bad_ev2", { "int32_t key", "double ts" })
local env = weir.env()
env:read_text_file(bad.file("1,2\n3,%s%n\n5,6\n"), { record = ev })
  :map(function(r) return "out " .. r.key end):print()
env:execute()
