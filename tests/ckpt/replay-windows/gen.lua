-- The input of the stateless replay job: ENTRIES timed lines "key value ts" of a replay file,
-- mostly key a, key b now and then, with pauses (some longer than the idleness timeout), from a
-- deterministic LCG.
local n = tonumber(arg and arg[1]) or tonumber(os.getenv("KILL_ENTRIES")) or 100000
local x = 777
local function rnd(m)
  x = (x * 1103515245 + 12345) % 2147483648
  return x % m
end
local out = assert(io.open("in.replay", "wb"))
local buf = { "@0 a 0 0" }
local t = 0
for _ = 1, n do
  local gap = rnd(100) == 0 and 3000 + rnd(5000) or rnd(40)
  local key = rnd(20) == 0 and "b" or "a"
  t = t + gap
  local ts = math.max(0, t - rnd(500)) -- event time: the clock's, up to 0.5 s behind
  buf[#buf + 1] = ("+%dms %s %d %d"):format(gap, key, rnd(1000), ts)
  if #buf == 4096 then
    out:write(table.concat(buf, "\n"), "\n")
    buf = {}
  end
end
out:write(table.concat(buf, "\n"), "\n")
out:close()
