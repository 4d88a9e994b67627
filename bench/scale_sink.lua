-- bench/scale_sink.lua: what writing a repartition topic would cost per record (docs/SCALING.md):
-- N generated "key,ts,v" records -> kafka_sink to TOPIC of the mock cluster, the partition of
-- each its key group (weir.key_group(key, P)), keyed by the key; the sink flushes at the end.
-- Timed from outside (CPU of this process, and of the broker).
--
--   weir run bench/scale_sink.lua -- BOOTSTRAP_SERVERS TOPIC P N [NAME=VALUE]...
local weir = require("weir")
local bootstrap, topic, p, n = weir.args[1], weir.args[2], tonumber(weir.args[3]),
  tonumber(weir.args[4])
if not (bootstrap and topic and p and n) then
  error("bench/scale_sink.lua: expected BOOTSTRAP_SERVERS TOPIC P N [NAME=VALUE]...")
end
local props = {}
for i = 5, #weir.args do
  local k, v = weir.args[i]:match("^([^=]+)=(.*)$")
  props[assert(k, "bench/scale_sink.lua: a property is NAME=VALUE")] = v
end
local groups = {}
for k = 0, 1023 do
  groups[k] = weir.key_group(k, p)
end

local env = weir.env{ parallelism = 1 }
env:generate(function(i) return i end, { count = n })
  :map(function(i) return ("%d,%d,%d"):format(i % 1024, i, i % 1000) end)
  :kafka_sink{ bootstrap_servers = bootstrap, topic = topic, properties = props,
    key = function(s) return tonumber(s:match("^%d+")) end,
    partition = function(s) return groups[tonumber(s:match("^%d+"))] end }
env:execute("bench scale_sink")
