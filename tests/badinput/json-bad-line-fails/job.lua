-- A malformed JSON line from stdin, typed, no on_error: the job fails naming the source, the
-- line, the column and what was expected.
local weir = require("weir")
local ev = weir.record_type("bad_jev", { "int32_t key", "double ts" })
local env = weir.env()
env:stdin{ format = "json", record = ev }
  :map(function(r) return "out " .. r.key end):print()
env:execute()
