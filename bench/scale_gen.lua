-- bench/scale_gen.lua: the input of bench/scale.lua, written as one file per partition of the
-- "KEY<TAB>KEY,TS,V" lines kcat -K '\t' produces: N records over P partitions, partitioned by
-- key group (weir.key_group(key, P) = the partition, the rule of `weir run --group`), with the
-- same number of keys and records in every partition (KEYS / P keys each: the first integers
-- whose key group is that partition), so two processes of the group get equal shares and the
-- bench measures scaling, not the hash's skew. In each partition a key has one record every
-- 100 ms of event time (timestamps never go back in a partition); V is a small integer.
--
--   weir run bench/scale_gen.lua -- N P KEYS DIR      (writes DIR/0.txt .. DIR/<P-1>.txt)
local weir = require("weir")
local n, p, nkeys, dir = tonumber(weir.args[1]), tonumber(weir.args[2]), tonumber(weir.args[3]),
  weir.args[4]
if not (n and p and nkeys and dir) or nkeys % p ~= 0 or n % p ~= 0 then
  error("bench/scale_gen.lua: expected N P KEYS DIR, N and KEYS multiples of P")
end
local per = nkeys / p
local keys = {}
for i = 0, p - 1 do
  keys[i] = {}
end
local k, left = 0, nkeys
while left > 0 do
  local g = weir.key_group(k, p)
  local ks = keys[g]
  if #ks < per then
    ks[#ks + 1] = k
    left = left - 1
  end
  k = k + 1
end
local rows = n / p
for part = 0, p - 1 do
  local f = assert(io.open(("%s/%d.txt"):format(dir, part), "w"))
  local ks = keys[part]
  local buf, nb = {}, 0
  for j = 0, rows - 1 do
    local key = ks[j % per + 1]
    nb = nb + 1
    buf[nb] = ("%d\t%d,%d,%d\n"):format(key, key, math.floor(j / per) * 100, (j * 7 + key) % 1000)
    if nb == 4096 then
      f:write(table.concat(buf, "", 1, nb))
      nb = 0
    end
  end
  f:write(table.concat(buf, "", 1, nb))
  f:close()
end
