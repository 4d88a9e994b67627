-- Typed lines cut and parsed in one pass over the read buffer, with bad lines of every kind
-- among good ones (and good lines with CRLF or blanks, which the pass hands to the line-by-line
-- parse), over several batches and a last line without newline: every bad line is one error
-- naming its line, every overlong one is counted, every good one is a record.
local weir = require("weir")
local bad = require("badinput")
local BAD = { "x,1", "", "1,2,3", "123456789012345678901,1", "1,2\r\r", ("9"):rep(300) }
local lines = {}
for i = 1, 3000 do
  if i % 97 == 0 then
    lines[i] = BAD[(math.floor(i / 97) - 1) % #BAD + 1]
  elseif i % 89 == 0 then
    lines[i] = ("%d,%d\r"):format(i, i)
  elseif i % 83 == 0 then
    lines[i] = (" %d , %d "):format(i, i)
  else
    lines[i] = ("%d,%d"):format(i, i)
  end
end
local ev = weir.record_type("one_pass_ev", { "int32_t key", "double ts" })
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }
local s = env:read_text_file(bad.file(table.concat(lines, "\n")),
  { record = ev, max_line_bytes = 100 })
s:map(function(r)
  assert(r.key == r.ts, "a record's fields differ")
  return "out"
end):print()
s:get_side_output(errors):map(function(e) return "err " .. e.error end):print()
env:execute()
bad.cleanup()
