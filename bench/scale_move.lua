-- bench/scale_move.lua: bench/scale.lua's job, slowed, for timing partition moves
-- (bench/scale_move.sh, docs/SCALING.md): each record first spins SPIN iterations of a
-- little arithmetic (so the input lasts while processes join and leave), and a record of a
-- partition that had none for 300 ms of processing time (the first after a move) writes
-- "first P" on stderr. The same windows and output as bench/scale.lua.
--
--   weir run bench/scale_move.lua --group NAME -- BOOTSTRAP_SERVERS TOPIC P OUT SPIN
--     [NAME=VALUE]...
local weir = require("weir")
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local bootstrap, topic, p, out, spin = weir.args[1], weir.args[2], tonumber(weir.args[3]),
  weir.args[4], tonumber(weir.args[5])
if not (bootstrap and topic and p and out and spin) then
  error("bench/scale_move.lua: expected BOOTSTRAP_SERVERS TOPIC P OUT SPIN [NAME=VALUE]...")
end
local props = {}
for i = 6, #weir.args do
  local k, v = weir.args[i]:match("^([^=]+)=(.*)$")
  props[assert(k, "bench/scale_move.lua: a property is NAME=VALUE")] = v
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

local last = {}
local env = weir.env{ parallelism = 1, max_parallelism = p,
  auto_watermark_interval = common.WATERMARK_INTERVAL }
local ev = weir.record_type("scale_ev", { "int32_t key", "double ts", "double v" })
env:kafka_source{ bootstrap_servers = bootstrap, topics = topic, record = ev,
  stopping_offsets = "latest", properties = props,
  watermarks = weir.watermarks.monotonous():with_timestamp_assigner(function(e) return e.ts end) }
  :process(function(e, ctx, emit)
    local x = e.v
    for i = 1, spin do x = (x * 31 + i) % 1000003 end
    if x < 0 then return end -- never: keeps the spin
    local now = ctx:current_processing_time()
    local part = weir.key_group(e.key, p)
    if now - (last[part] or -1e300) > 300 then
      io.stderr:write(("first %d\n"):format(part))
      io.stderr:flush()
    end
    last[part] = now
    emit(e)
  end)
  :key_by(function(e) return e.key end, { partitioned = true })
  :window(weir.windows.sliding_event_time("20s", "1s"))
  :aggregate(stats, function(key, ctx, as, emit)
    local a = as[1]
    emit(("%d %d %d %d %d %d"):format(key, ctx:window().start, a.n, a.sum, a.min, a.max))
  end)
  :write_text(out, { overwrite = true })

env:execute("bench scale_move")
