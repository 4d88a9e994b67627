-- Unbounded recursion in a map: the job fails naming the map (script line, subtask), the
-- record and the user's line, although the error handler runs with almost no stack left.
-- Interpreted (jit.off), so that LuaJIT always has room to run the handler: see
-- map-stack-overflow-jit for compiled code.
local weir = require("weir")
jit.off()
local function down(n)
  return down(n + 1) + 1
end
local env = weir.env()
env:from_collection({ 1, 2 })
  :map(function(v) return "out " .. down(v) end)
  :print()
env:execute()
