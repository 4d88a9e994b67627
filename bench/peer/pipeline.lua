-- The hand-written LuaJIT peer of bench/pipeline.lua: i % 1024 keyed by Flink's key groups at
-- parallelism 2 (max parallelism 128: murmur hash of the int, SEMANTICS.md), per subtask a
-- count and a sum, in one loop. Run with Debian's luajit:
--
--   luajit bench/peer/pipeline.lua N
local bit = require("bit")
local band, bxor, rol, rshift, lshift, tobit = bit.band, bit.bxor, bit.rol, bit.rshift,
  bit.lshift, bit.tobit
local n = tonumber(arg[1] or "10000000")

local function mul(a, b) -- 32-bit multiply
  return tobit(tobit(a * band(b, 0xffff)) + lshift(tobit(a * rshift(b, 16)), 16))
end

local function murmur(code)
  local h = mul(code, tobit(0xcc9e2d51))
  h = rol(h, 15)
  h = mul(h, 0x1b873593)
  h = rol(h, 13)
  h = tobit(mul(h, 5) + tobit(0xe6546b64))
  h = bxor(h, 4)
  h = bxor(h, rshift(h, 16))
  h = mul(h, tobit(0x85ebca6b))
  h = bxor(h, rshift(h, 13))
  h = mul(h, tobit(0xc2b2ae35))
  h = bxor(h, rshift(h, 16))
  if h >= 0 then return h end
  if h ~= -2147483648 then return -h end
  return 0
end

local count, sum = { [0] = 0, 0 }, { [0] = 0, 0 }
for i = 0, n - 1 do
  local v = i % 1024
  local s = math.floor((murmur(v) % 128) * 2 / 128)
  count[s] = count[s] + 1
  sum[s] = sum[s] + v
end
for s = 0, 1 do
  print(("subtask %d count %d sum %d"):format(s, count[s], sum[s]))
end
