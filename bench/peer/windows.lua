-- The hand-written LuaJIT peer of bench/windows.lua (rows windows_typed, windows_table,
-- windows_custom) and bench/text.lua (text_lua, text_c): what a Lua user writes instead of the
-- job, a loop counting events per (window start, key) in nested Lua tables, a FIFO of window
-- starts fired once the watermark (largest timestamp - 1) passes their end. Run with Debian's
-- luajit:
--
--   luajit bench/peer/windows.lua N          the events of bench/windows.lua
--   luajit bench/peer/windows.lua -f FILE    "key,ts" lines, parsed with find + sub + tonumber
local KEYS, W, MOD = 10000, 5000, 4294967296
local floor, tonumber, find, sub = math.floor, tonumber, string.find, string.sub

local open = {} -- window start -> { key -> count }
local starts, head, tail = {}, 1, 0
local max_ts = -math.huge
local fired, counted, digest = 0, 0, 0

local function fire_upto(wm)
  while head <= tail and starts[head] + W - 1 <= wm do
    local s = starts[head]
    starts[head] = nil
    head = head + 1
    local index = s / W + 1
    for key, c in pairs(open[s]) do
      fired = fired + 1
      counted = counted + c
      digest = (digest + (key + 1) * index * c) % MOD
    end
    open[s] = nil
  end
end

local function add(key, ts)
  if ts > max_ts then
    max_ts = ts
    fire_upto(ts - 1)
  end
  local s = ts - ts % W
  local w = open[s]
  if not w then
    w = {}
    open[s] = w
    tail = tail + 1
    starts[tail] = s
  end
  w[key] = (w[key] or 0) + 1
end

if arg[1] == "-f" then
  for line in io.lines(arg[2]) do
    local c = find(line, ",", 1, true)
    add(tonumber(sub(line, 1, c - 1)), tonumber(sub(line, c + 1)))
  end
else
  for i = 0, tonumber(arg[1] or "10000000") - 1 do
    add(i % KEYS, floor(i / 10))
  end
end
fire_upto(math.huge)
print(("windows %d events %d digest %d"):format(fired, counted, digest))
