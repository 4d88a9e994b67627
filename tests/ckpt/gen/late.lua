-- The input of the window job: lines "key ts value", timestamps rising with bounded disorder
-- (up to 2 s) and 1 in 50 records late (30 s behind).
local lines = require("lines")
local rnd = lines.lcg(4242)
lines.write("in.txt", lines.count("KILL_LINES", 300000), nil, function(i)
  local ts = 60000 + i * 10 - rnd(2000)
  if rnd(50) == 0 then
    ts = ts - 30000 -- late: behind the watermark, past allowed lateness for most windows
  end
  return ("k%d %d %d"):format(rnd(50), ts, rnd(1000))
end)
