-- The input of the stateless file job: LINES lines "key ts value" with bounded disorder (a
-- deterministic LCG, so every run makes the same bytes) and some malformed lines.
local n = tonumber(arg and arg[1]) or tonumber(os.getenv("KILL_LINES")) or 300000
local x = 12345
local function rnd(m)
  x = (x * 1103515245 + 12345) % 2147483648
  return x % m
end
local out = assert(io.open("in.txt", "wb"))
local buf = {}
for i = 1, n do
  local ts = 10000 + i * 10 - rnd(2000) -- up to 2 s out of order
  buf[#buf + 1] = ("k%d %d %d"):format(rnd(97), ts, rnd(1000))
  if #buf == 4096 then
    out:write(table.concat(buf, "\n"), "\n")
    buf = {}
  end
end
if #buf > 0 then
  out:write(table.concat(buf, "\n"), "\n")
end
out:close()
