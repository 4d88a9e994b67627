-- Unbounded recursion in compiled code: a trace's exit can leave LuaJIT no stack to run the
-- error handler at all, and then only the record being delivered can be named (API.md,
-- Errors). Either way the message is clean and names the record.
local weir = require("weir")
local function down(n)
  return down(n + 1) + 1
end
local env = weir.env()
env:from_collection({ 1, 2 })
  :map(function(v) return "out " .. down(v) end)
  :print()
env:execute()
