-- Specs for weir.copartition (key_by(fn, { partitioned = true }); the mock-cluster runs are
-- tests/cli/scale_repart_claim.sh): the options' checks, the claim's check (a key of key group
-- p under P = its topic's partition count arriving in partition p passes; anywhere else fails
-- naming the key_by, the key, its key group and the partition), the sample (the first FIRST
-- records of each partition, then 1 in EVERY), and a key_by without a Kafka source upstream
-- (one partition: nothing to check).
local spec = require("spec")
local weir = require("weir")
local copartition = require("weir.copartition")
local it, eq, raises = spec.it, spec.eq, spec.raises

it("key_by's options", function()
  eq(copartition.options(nil), false)
  eq(copartition.options({}), false)
  eq(copartition.options({ partitioned = true }), true)
  eq(copartition.options({ partitioned = false }), false)
  raises(function() copartition.options({ partitioned = 1 }) end,
    "key_by: partitioned must be true or false, got 1")
  raises(function() copartition.options({ partitoned = true }) end,
    "key_by: unknown option partitoned (key_by takes partitioned)")
  raises(function() copartition.options({ b = 1, a = 2 }) end, "unknown options a, b")
  raises(function() copartition.options("partitioned") end,
    "the options must be a table such as { partitioned = true }, got string")
end)

-- a Kafka source node as the check sees it: its partitions (two topics: t has 4, u has 2)
local function kafka_node()
  local parts = {}
  for p = 0, 3 do parts[#parts + 1] = { topic = "t", id = p } end
  for p = 0, 1 do parts[#parts + 1] = { topic = "u", id = p } end
  return { kind = "source", source = "kafka", inputs = {}, kafka_parts = parts }
end

local function key_of(group, n)
  for i = 0, 1000 do
    if weir.key_group("k" .. i, n) == group then return "k" .. i end
  end
end

it("the claim: key group under the topic's partition count = the partition", function()
  local src = kafka_node()
  for p = 0, 3 do
    copartition.check(src, p, key_of(p, 4), "key_by (x)") -- passes
  end
  copartition.check(src, 5, key_of(1, 2), "key_by (x)") -- u/1, P = 2
  local k = key_of(2, 4)
  local ok, e = pcall(copartition.check, src, 1, k, "key_by (job.lua:3, partitioned = true, "
    .. "feeding window (job.lua:4))")
  eq(ok, false)
  eq(e.weir_job_error, true)
  eq(e.text, ('key_by (job.lua:3, partitioned = true, feeding window (job.lua:4)): key "%s" is '
    .. 'in key group 2 (weir.key_group(key, 4): t has 4 partitions) but arrived in partition '
    .. 't/1: the input is not partitioned by this key (a producer sends key k to partition '
    .. 'weir.key_group(k, 4)); without partitioned = true the key_by does not rely on it')
    :format(k))
end)

it("the sample: the first FIRST of each partition, then 1 in EVERY", function()
  local src = kafka_node()
  local map = { kind = "map", inputs = { { node = src } } }
  local port = { node = map, key_at = "job.lua:9" }
  local pushed = 0
  local push = copartition.wrap(port, { label = "reduce (job.lua:10)" }, function()
    pushed = pushed + 1
  end)
  local cur = src.kafka_cur
  eq(cur[0], -1)
  local good, wrong = key_of(0, 4), key_of(3, 4)
  cur[0] = 0
  for _ = 1, copartition.FIRST do push(0, "v", nil, good) end
  -- record FIRST+1 is not checked (not a multiple of EVERY), FIRST+EVERY is
  local n = copartition.FIRST
  while (n + 1) % copartition.EVERY ~= 0 do
    n = n + 1
    push(0, "v", nil, wrong)
  end
  eq(pushed, n)
  local ok, e = pcall(push, 0, "v", nil, wrong)
  eq(ok, false)
  eq(e.text:find("key_by (job.lua:9, partitioned = true, feeding reduce (job.lua:10)): key",
    1, true), 1)
  -- another partition has a sample of its own; -1 (no source record being pushed): unchecked
  cur[0] = 1
  ok = pcall(push, 0, "v", nil, wrong)
  eq(ok, false)
  cur[0] = -1
  push(0, "v", nil, wrong)
end)

it("no Kafka source upstream: the push itself", function()
  local f = function() end
  local src = { kind = "source", source = "elements", inputs = {} }
  eq(copartition.wrap({ node = src }, { label = "x" }, f), f)
end)
spec.finish()
