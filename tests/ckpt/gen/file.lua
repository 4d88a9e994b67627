-- The input of the stateless and rich file jobs: lines "key ts value" with bounded disorder
-- (up to 2 s out of order).
local lines = require("lines")
local rnd = lines.lcg(12345)
lines.write("in.txt", lines.count("KILL_LINES", 300000), nil, function(i)
  local ts = 10000 + i * 10 - rnd(2000)
  return ("k%d %d %d"):format(rnd(97), ts, rnd(1000))
end)
