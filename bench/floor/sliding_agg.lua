-- The floor of bench/sliding.lua's "agg" variant (the built-in weir.aggregates.count(), no
-- window function): the job's own code and nothing of weir's, in one plain LuaJIT loop. Per
-- event the generator's { key, ts } table, the timestamp extractor and the key selector; per
-- fired window the checksum sink (bench/common.lua's, loaded here) reading key, start and
-- value from a record, here a Lua table (weir's is a weir.aggregates.window_result). The fire's
-- arithmetic is free: the count comes from a running sum per key over a ring of its last 60
-- slice counts in Lua arrays, as in the peer (bench/peer/sliding.lua), whose order of fires
-- this keeps (the sink's checksum does not depend on it). Prints the weir job's line; run with
-- Debian's luajit (bench/README.md "Floors"):
--
--   luajit bench/floor/sliding_agg.lua N
local here = arg[0]:match("^(.*)/floor/[^/]*$") or ".." -- bench/, also from bench/floor/
package.path = here .. "/?.lua;" .. package.path
-- bench/common.lua reads only weir.args (its record count) of the weir module
package.loaded.weir = { args = arg }
local common = require("common")

local KEYS, SLIDE_MS, SLICES = 10000, 1000, 60
local floor = math.floor
local n = common.record_count("bench/floor/sliding_agg.lua", "1000000")

-- the job's functions, as bench/sliding.lua writes them
local generate = function(i) return { i % KEYS, floor(i / 10) } end
local timestamp_of = function(e) return e[2] end
local key_selector = function(e) return e[1] end
local sink = common.checksum_sink(function(r)
  return (r.key + 1) * (r.start / SLIDE_MS + 60) * r.value
end, nil, "value")
local sink_fn = sink.sink
sink.open(sink)

local ring, sum = {}, {} -- ring[key * SLICES + slot], sum[key]: the peer's
for k = 0, KEYS - 1 do
  sum[k] = 0
  for j = 0, SLICES - 1 do
    ring[k * SLICES + j] = 0
  end
end
local next_s

local function fire_next()
  local j = next_s % SLICES
  local start = next_s * SLIDE_MS
  for key = 0, KEYS - 1 do
    local c = sum[key]
    if c ~= 0 then
      sink_fn(sink, { key = key, start = start, value = c })
      local r = key * SLICES + j
      sum[key] = c - ring[r]
      ring[r] = 0
    end
  end
  next_s = next_s + 1
end

local max_ts = -1
for i = 0, n - 1 do
  local e = generate(i)
  local ts, key = timestamp_of(e), key_selector(e)
  local s = floor(ts / SLIDE_MS)
  if not next_s then
    next_s = s - (SLICES - 1)
  end
  if ts > max_ts then
    max_ts = ts
    while (next_s + SLICES) * SLIDE_MS <= max_ts do
      fire_next()
    end
  end
  local r = key * SLICES + s % SLICES
  ring[r] = ring[r] + 1
  sum[key] = sum[key] + 1
end
if next_s then
  while next_s <= floor(max_ts / SLIDE_MS) do
    fire_next()
  end
end
sink.close(sink)
