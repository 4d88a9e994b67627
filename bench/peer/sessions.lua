-- The hand-written LuaJIT peer of bench/sessions.lua: per key a list of its open sessions
-- { start, stop, count } (a Lua table each), an element's [t, t + 5 s) merged with every session
-- it overlaps or touches; a binary min-heap of { stop, key, start } as the timers, an entry
-- whose session has since grown or fired skipped when it comes up. The watermark is the largest
-- timestamp so far - 5 s - 1; a session fires once it reaches its end - 1. Run with Debian's
-- luajit:
--
--   luajit bench/peer/sessions.lua N
local KEYS, BURST, GAP, BOUND, MOD = 10000, 20000, 5000, 5000, 4294967296
local OFFSETS = { [0] = 0, 1000, 2000, 8000, 4000, 9000, 10000, 11000 }
local floor = math.floor
local n = tonumber(arg[1] or "10000000")

local sessions = {} -- key -> list of sessions, sorted by start
for k = 0, KEYS - 1 do
  sessions[k] = {}
end
local heap, hn = {}, 0
local fired, counted, digest = 0, 0, 0

local function push(stop, key, start)
  hn = hn + 1
  local i = hn
  while i > 1 do
    local p = floor(i / 2)
    if heap[p][1] <= stop then
      break
    end
    heap[i] = heap[p]
    i = p
  end
  heap[i] = { stop, key, start }
end

local function pop()
  local top, x = heap[1], heap[hn]
  heap[hn] = nil
  hn = hn - 1
  local i = 1
  while true do
    local c = 2 * i
    if c > hn then
      break
    end
    if c < hn and heap[c + 1][1] < heap[c][1] then
      c = c + 1
    end
    if x[1] <= heap[c][1] then
      break
    end
    heap[i] = heap[c]
    i = c
  end
  if hn > 0 then
    heap[i] = x
  end
  return top
end

local function advance(wm)
  while hn > 0 and heap[1][1] - 1 <= wm do
    local t = pop()
    local list = sessions[t[2]]
    for i = 1, #list do
      local s = list[i]
      if s.start == t[3] and s.stop == t[1] then
        fired = fired + 1
        counted = counted + s.count
        digest = (digest + (t[2] + 1) * ((s.start + 3 * s.stop) % 65536 + 1) * s.count) % MOD
        table.remove(list, i)
        break
      end
    end
  end
end

local function add(key, t)
  local list = sessions[key]
  local start, stop, count = t, t + GAP, 1
  local i, first = 1, nil
  while i <= #list do
    local s = list[i]
    if s.start <= stop and s.stop >= start then -- overlaps or touches: merge it in
      if s.start <= start and s.stop >= stop and not first then
        s.count = s.count + 1 -- inside a session: nothing else changes
        return
      end
      if s.start < start then start = s.start end
      if s.stop > stop then stop = s.stop end
      count = count + s.count
      if not first then
        first = i
        i = i + 1
      else
        table.remove(list, i)
      end
    elseif s.start > stop then
      break
    else
      i = i + 1
    end
  end
  if first then
    local s = list[first]
    s.start, s.stop, s.count = start, stop, count
  else
    table.insert(list, i, { start = start, stop = stop, count = count })
  end
  push(stop, key, start)
end

local max_ts = -math.huge
for i = 0, n - 1 do
  local k = i % KEYS
  local j = floor(i / KEYS)
  local ts = floor(j / 8) * BURST + OFFSETS[j % 8] + floor(k / 10)
  if ts > max_ts then
    max_ts = ts
    advance(max_ts - BOUND - 1)
  end
  add(k, ts)
end
advance(math.huge)
print(("sessions %d events %d digest %d"):format(fired, counted, digest))
