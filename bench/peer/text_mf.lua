-- The hand-written LuaJIT peer of bench/text_mf.lua: io.lines over the file, the same parse
-- and filter, a count and sum. Run with Debian's luajit:
--
--   luajit bench/peer/text_mf.lua FILE
local tonumber, find, sub = tonumber, string.find, string.sub

local count, sum = 0, 0
for line in io.lines(arg[1]) do
  local k = tonumber(sub(line, 1, find(line, ",", 1, true) - 1))
  if k % 2 == 0 then
    count = count + 1
    sum = sum + k
  end
end
print(("count %d sum %d"):format(count, sum))
