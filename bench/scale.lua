-- bench/scale.lua: the scale-out benchmark's job (bench/scale.sh; issue 19 item 7).
-- env:kafka_source (typed "key,ts,v" messages parsed in C, bounded by stopping_offsets =
-- "latest", event time per partition with a monotonous generator each) -> key_by -> sliding
-- event-time windows of 20 s every 1 s -> aggregate (count, sum, min and max of v) ->
-- write_text of one line per window. Its accumulator is a table and has no merge, so the
-- windows run on the general window operator: every record is added to each of the 20
-- windows it lies in by a Lua call, a window of real work per record. max_parallelism is the
-- topic's partition count P, so `weir run --group` shares it by the rule key group = input
-- partition (bench/scale_gen.lua partitions the input by weir.key_group(key, P)).
--
--   weir run bench/scale.lua [--group NAME] -- BOOTSTRAP_SERVERS TOPIC P OUT [NAME=VALUE]...
local weir = require("weir")
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local bootstrap, topic, p, out = weir.args[1], weir.args[2], tonumber(weir.args[3]), weir.args[4]
if not (bootstrap and topic and p and out) then
  error("bench/scale.lua: expected BOOTSTRAP_SERVERS TOPIC P OUT [NAME=VALUE]...")
end
local props = {}
for i = 5, #weir.args do
  local k, v = weir.args[i]:match("^([^=]+)=(.*)$")
  props[assert(k, "bench/scale.lua: a property is NAME=VALUE")] = v
end

local stats = {
  create = function() return { n = 0, sum = 0, min = math.huge, max = -math.huge } end,
  add = function(e, a)
    local v = e.v
    a.n, a.sum = a.n + 1, a.sum + v
    if v < a.min then a.min = v end
    if v > a.max then a.max = v end
    return a
  end,
  result = function(a) return a end,
}

local env = weir.env{ parallelism = 1, max_parallelism = p,
  auto_watermark_interval = common.WATERMARK_INTERVAL }
local ev = weir.record_type("scale_ev", { "int32_t key", "double ts", "double v" })
env:kafka_source{ bootstrap_servers = bootstrap, topics = topic, record = ev,
  stopping_offsets = "latest", properties = props,
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(e) return e.ts end) }
  :key_by(function(e) return e.key end, { partitioned = true })
  :window(weir.windows.sliding_event_time("20s", "1s"))
  :aggregate(stats, function(key, ctx, as, emit)
    local a = as[1]
    emit(("%d %d %d %d %d %d"):format(key, ctx:window().start, a.n, a.sum, a.min, a.max))
  end)
  :write_text(out, { overwrite = true })

env:execute("bench scale")
