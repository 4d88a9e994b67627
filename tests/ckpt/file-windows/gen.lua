-- The input of the window job: LINES lines "key ts value", timestamps rising with bounded
-- disorder (up to 2 s) and 1 in 50 records late (30 s behind), from a deterministic LCG.
local n = tonumber(arg and arg[1]) or tonumber(os.getenv("KILL_LINES")) or 300000
local x = 4242
local function rnd(m)
  x = (x * 1103515245 + 12345) % 2147483648
  return x % m
end
local out = assert(io.open("in.txt", "wb"))
local buf = {}
for i = 1, n do
  local ts = 60000 + i * 10 - rnd(2000)
  if rnd(50) == 0 then
    ts = ts - 30000 -- late: behind the watermark, past allowed lateness for most windows
  end
  buf[#buf + 1] = ("k%d %d %d"):format(rnd(50), ts, rnd(1000))
  if #buf == 4096 then
    out:write(table.concat(buf, "\n"), "\n")
    buf = {}
  end
end
if #buf > 0 then
  out:write(table.concat(buf, "\n"), "\n")
end
out:close()
