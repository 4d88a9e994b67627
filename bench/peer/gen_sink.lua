-- The hand-written LuaJIT peer of bench/gen_sink.lua: what a Lua user writes instead of the job,
-- a loop calling a generator and a sink function. Run with Debian's luajit:
--
--   luajit bench/peer/gen_sink.lua N
local n = tonumber(arg[1] or "10000000")

local function generate(i) return i end

local count, sum = 0, 0
local function sink(v)
  count = count + 1
  sum = sum + v
end

for i = 0, n - 1 do
  sink(generate(i))
end
print(("count %d sum %d"):format(count, sum))
