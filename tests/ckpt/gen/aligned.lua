-- The inputs of the aligned job (replay-aligned): two replays, one line every 10 ms each, the
-- fast one 10 minutes ahead of the slow one in event time (keys a to c, values from an LCG).
local lines = require("lines")
local n = lines.count("KILL_ENTRIES", 50000)
for _, f in ipairs({ { "slow.replay", 0, 31 }, { "fast.replay", 600000, 57 } }) do
  local rnd = lines.lcg(f[3])
  local ts = f[2]
  lines.write(f[1], n, ("@0 a 1 %d"):format(ts), function()
    ts = ts + 100
    return ("+10ms %s %d %d"):format(({ "a", "b", "c" })[rnd(3) + 1], rnd(1000), ts)
  end)
end
