-- weir.kafka_health: what a Kafka source's connection to its cluster looks like now, for
-- --progress, kill -USR1 / :status and env:status(): librdkafka's statistics (its stats
-- callback, statistics.interval.ms, once a second unless the source's properties set it;
-- runtime/source_kafka.c keeps the newest) read into the brokers the client learned from the
-- cluster and their state, the source's partitions and those whose leader is unknown or down,
-- and the last error librdkafka reported (cleared once messages arrive again). Read on demand,
-- at most once per statistics report: set-up and report code, never traced.
jit.off(true, true)
local ffi = require("ffi")
local C = require("weir.ffi")
local json = require("weir.json")

local M = {}

-- per source node: { seq = the statistics report read, health = its summary }
local cache = setmetatable({}, { __mode = "k" })

---The summary of one statistics report (a decoded librdkafka stats JSON object) and the last
---error: { brokers = n, down = { { name, state, for_ms }... }, partitions = n, unreachable =
---n (leader unknown, or a broker that is not up), last_error = string or nil }. Only the
---cluster's brokers count (a node id from its metadata: not a bootstrap address not yet
---matched to one, nor librdkafka's logical GroupCoordinator); only the partitions the source
---reads (librdkafka's "desired" ones).
function M.summarize(stats, last_error)
  local h = { brokers = 0, down = {}, partitions = 0, unreachable = 0,
              last_error = last_error ~= "" and last_error or nil }
  local up = {}
  for _, b in pairs(type(stats) == "table" and type(stats.brokers) == "table" and stats.brokers
      or {}) do
    if type(b) == "table" and b.source ~= "logical" and b.source ~= "internal"
        and tonumber(b.nodeid) and b.nodeid >= 0 then
      h.brokers = h.brokers + 1
      if b.state == "UP" then
        up[b.nodeid] = true
      else
        h.down[#h.down + 1] = { name = tostring(b.name), state = tostring(b.state),
                                for_ms = math.floor((tonumber(b.stateage) or 0) / 1000) }
      end
    end
  end
  table.sort(h.down, function(a, b) return a.name < b.name end)
  for _, t in pairs(type(stats) == "table" and type(stats.topics) == "table" and stats.topics
      or {}) do
    for id, p in pairs(type(t) == "table" and type(t.partitions) == "table" and t.partitions
        or {}) do
      if id ~= "-1" and type(p) == "table" and p.desired then
        h.partitions = h.partitions + 1
        if not (tonumber(p.leader) and p.leader >= 0 and up[p.leader]) then
          h.unreachable = h.unreachable + 1
        end
      end
    end
  end
  return h
end

---The summary of a Kafka source node now (nil before librdkafka's first report).
function M.of(job, node)
  local box = ffi.new("double[3]")
  local js = C.weir_kafka_stats(job.rt, node.src_id, box)
  local c = cache[node]
  if js == nil then
    return nil
  end
  if not c or c.seq ~= box[0] then
    local ok, v = json.decoder()(js, box[1])
    local err = C.weir_kafka_last_error(job.rt, node.src_id)
    c = { seq = box[0], health = M.summarize(ok and v or nil, err ~= nil and ffi.string(err)
      or nil) }
    cache[node] = c
  end
  return c.health
end

---Whether the summary shows trouble: a broker not up, or a partition without a reachable leader.
function M.troubled(h)
  return h ~= nil and (#h.down > 0 or h.unreachable > 0)
end

local function down_text(h)
  local names = {}
  for i, b in ipairs(h.down) do
    names[i] = ("%s (%s for %ds)"):format(b.name, b.state, math.floor(b.for_ms / 1000))
  end
  return ("%d of %d broker(s) down%s%s, %d of %d partition(s) without a reachable leader")
    :format(#h.down, h.brokers, #names > 0 and ": " or "", table.concat(names, ", "),
      h.unreachable, h.partitions)
end

---The Kafka sources' part of the --progress line: "" while every broker is up.
function M.progress_text(job)
  local out = {}
  for _, node in ipairs(job.plan.sources) do
    if node.source == "kafka" and node.src_id then
      local h = M.of(job, node)
      if M.troubled(h) then
        out[#out + 1] = ("; %s: %s"):format(node.label, down_text(h))
      end
    end
  end
  return table.concat(out)
end

---Per Kafka source (label -> summary) for weir.status.collect; nil without Kafka sources.
function M.collect(job)
  local t
  for _, node in ipairs(job.plan.sources) do
    if node.source == "kafka" and node.src_id then
      t = t or {}
      t[#t + 1] = { label = node.label, health = M.of(job, node) }
    end
  end
  return t
end

---The status text's lines (kill -USR1, :status) for what M.collect gave.
function M.text_lines(list, out)
  for _, s in ipairs(list or {}) do
    local h = s.health
    if not h then
      out[#out + 1] = ("%s: no statistics from librdkafka yet (or statistics.interval.ms is 0)")
        :format(s.label)
    elseif M.troubled(h) then
      out[#out + 1] = ("%s: %s%s"):format(s.label, down_text(h),
        h.last_error and ("; last error: %s"):format(h.last_error) or "")
    else
      out[#out + 1] = ("%s: %d broker(s) up, %d partition(s) with a leader%s"):format(s.label,
        h.brokers, h.partitions,
        h.last_error and ("; last error: %s"):format(h.last_error) or "")
    end
  end
end

return M
