-- A typed line of 2^24 + 1 fields (2^24 separators, beyond the 2^23 that overflowed the field
-- count, D7) next to a good line: the bad one is reported with its exact count, the good one
-- goes through.
local weir = require("weir")
local path = os.tmpname()
local f = assert(io.open(path, "wb"))
f:write("1", string.rep(",", 2 ^ 24), "\n", "2,3\n")
f:close()
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local s = env:read_text_file(path, {
  record = weir.record_type("ev", { "int32_t key", "double ts" }),
  max_line_bytes = 2 ^ 25,
})
s:map(function(r) return ("out %d %g"):format(r.key, r.ts) end):print()
s:get_side_output(errors):map(function(e) return "err " .. e.error:sub(1, 60) end):print()
local ok, msg = pcall(env.execute, env, "many-separators")
os.remove(path)
assert(ok, msg)
