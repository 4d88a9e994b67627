-- The hand-written LuaJIT peer of bench/sliding.lua: per key a ring of its last 60 one-second
-- slice counts and their running sum (the count of the oldest window not yet fired), in Lua
-- arrays; windows fire in start order once the watermark (largest timestamp - 1) reaches their
-- end - 1. Run with Debian's luajit:
--
--   luajit bench/peer/sliding.lua N
local KEYS, SLIDE, SLICES, MOD = 10000, 1000, 60, 4294967296
local floor = math.floor
local n = tonumber(arg[1] or "1000000")

local ring, sum = {}, {} -- ring[key * SLICES + slot], sum[key]
for k = 0, KEYS - 1 do
  sum[k] = 0
  for j = 0, SLICES - 1 do
    ring[k * SLICES + j] = 0
  end
end
local next_s
local fired, counted, digest = 0, 0, 0

local function fire_next()
  local j = next_s % SLICES
  local index = next_s + SLICES
  for key = 0, KEYS - 1 do
    local c = sum[key]
    if c ~= 0 then
      fired = fired + 1
      counted = counted + c
      digest = (digest + (key + 1) * index * c) % MOD
      local r = key * SLICES + j
      sum[key] = c - ring[r]
      ring[r] = 0
    end
  end
  next_s = next_s + 1
end

local max_ts = -1
for i = 0, n - 1 do
  local key, ts = i % KEYS, floor(i / 10)
  local s = floor(ts / SLIDE)
  if not next_s then
    next_s = s - (SLICES - 1)
  end
  if ts > max_ts then
    max_ts = ts
    while (next_s + SLICES) * SLIDE <= max_ts do
      fire_next()
    end
  end
  local r = key * SLICES + s % SLICES
  ring[r] = ring[r] + 1
  sum[key] = sum[key] + 1
end
if next_s then
  while next_s <= floor(max_ts / SLIDE) do
    fire_next()
  end
end
print(("windows %d events %d digest %d"):format(fired, counted, digest))
