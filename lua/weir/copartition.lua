-- weir.copartition: `key_by(fn, { partitioned = true })`, the claim that every record of a key
-- arrives in one input partition (docs/API.md, key_by; docs/ARCHITECTURE.md, Scale-out). The
-- rule --group applies: the key group of a key, under max parallelism P = its topic's
-- partition count, is the partition it arrives in (a producer sends key k to partition
-- weir.key_group(k, P)). weir checks the claim on a sample of each partition's records that
-- reach the key_by — the first FIRST, then 1 in EVERY — and fails the job naming the key_by,
-- the key, its key group and the partition. A Kafka source upstream of such a key_by marks the
-- partition of the record it is pushing in a cell (node.kafka_cur: [0] its slot, -1 between
-- records; [1] its offset), which the check reads; a record that reaches the key_by outside a
-- source record's push (a window's fire, a timer) is not checked. Set-up code, except the
-- wrapped push.
local ffi = require("ffi")
local C = require("weir.ffi")
local util = require("weir.util")
local keys = require("weir.keys")
local format = require("weir.format")
local failure = require("weir.failure")

local M = {}
M.FIRST, M.EVERY = 1000, 100

local OPTS = { partitioned = true }

---key_by's options (nil or a table): returns whether the key_by is declared partitioned.
function M.options(opts)
  if opts == nil then
    return false
  end
  if type(opts) ~= "table" then
    util.build_error("key_by: the options must be a table such as { partitioned = true }, "
      .. "got %s", type(opts))
  end
  local unknown = {}
  for k in pairs(opts) do
    if not OPTS[k] then
      unknown[#unknown + 1] = tostring(k)
    end
  end
  if #unknown > 0 then
    table.sort(unknown)
    util.build_error("key_by: unknown option%s %s (key_by takes partitioned)",
      #unknown > 1 and "s" or "", table.concat(unknown, ", "))
  end
  local p = opts.partitioned
  if p ~= nil and type(p) ~= "boolean" then
    util.build_error("key_by: partitioned must be true or false, got %s", tostring(p))
  end
  return p == true
end

---The Kafka sources upstream of node u (through every input), in plan order.
local function kafka_sources(u, out, seen)
  if seen[u] then
    return out
  end
  seen[u] = true
  if u.kind == "source" then
    if u.source == "kafka" then
      out[#out + 1] = u
    end
    return out
  end
  for _, port in ipairs(u.inputs) do
    kafka_sources(port.node, out, seen)
  end
  return out
end
M.kafka_sources = kafka_sources

---The text naming a partitioned key_by that feeds node d.
local function where(port, d)
  return ("key_by (%spartitioned = true, feeding %s)"):format(
    port.key_at and (port.key_at .. ", ") or "", d.label)
end

---Partition count of slot s's topic in source src (its partitions known now).
local function topic_count(src, s)
  local t, n = src.kafka_parts[s + 1].topic, 0
  for _, p in ipairs(src.kafka_parts) do
    if p.topic == t then
      n = n + 1
    end
  end
  return n
end

---Checks key k of a record from slot s of source src against the claim; fails the job.
function M.check(src, s, k, label)
  local part = src.kafka_parts[s + 1]
  local n = topic_count(src, s)
  local h = keys.java_hash(k)
  if not h then
    return -- the exchange fails on it itself
  end
  local kg = tonumber(C.weir_keygroup_of(h, n))
  if kg ~= part.id then
    failure.job_error(("%s: key %s is in key group %d (weir.key_group(key, %d): %s has %d "
      .. "partitions) but arrived in partition %s/%d: the input is not partitioned by this key "
      .. "(a producer sends key k to partition weir.key_group(k, %d)); without "
      .. "partitioned = true the key_by does not rely on it"):format(label,
      format.brief(k, 200), kg, n, part.topic, n, part.topic, part.id, n))
  end
end
jit.off(M.check)

---The push a partitioned key_by's exchange calls (push(s, v, ts, k)): the sample checked, then
---the consumer's push. Without a Kafka source upstream (one partition) it is push itself.
function M.wrap(port, d, push)
  local srcs = kafka_sources(port.node, {}, {})
  if #srcs == 0 then
    return push
  end
  local cells, counts = {}, {}
  for i, src in ipairs(srcs) do
    src.kafka_cur = src.kafka_cur or ffi.new("double[2]", -1, -1)
    cells[i], counts[i] = src.kafka_cur, {}
  end
  local n, label, check = #srcs, where(port, d), M.check
  local FIRST, EVERY = M.FIRST, M.EVERY
  return function(st, v, ts, k)
    for i = 1, n do
      local s = cells[i][0]
      if s >= 0 then
        local cnt = counts[i]
        local c = (cnt[s] or 0) + 1
        cnt[s] = c
        if c <= FIRST or c % EVERY == 0 then
          check(srcs[i], s, k, label)
        end
      end
    end
    return push(st, v, ts, k)
  end
end

return M
