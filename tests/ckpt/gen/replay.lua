-- The input of the replay jobs: timed lines "key value ts" of a replay file, mostly key a, key
-- b now and then, with pauses (some longer than the idleness timeout).
local lines = require("lines")
local rnd = lines.lcg(777)
local t = 0
lines.write("in.replay", lines.count("KILL_ENTRIES", 100000), "@0 a 0 0", function()
  local gap = rnd(100) == 0 and 3000 + rnd(5000) or rnd(40)
  local key = rnd(20) == 0 and "b" or "a"
  t = t + gap
  local ts = math.max(0, t - rnd(500)) -- event time: the clock's, up to 0.5 s behind
  return ("+%dms %s %d %d"):format(gap, key, rnd(1000), ts)
end)
