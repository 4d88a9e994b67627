-- weir.exchange: how an operator's output reaches its consumers. Owns the senders of the three
-- partitionings (forward: the consumer's push itself; rebalance: round robin; hash: Flink's key
-- groups), the fan-out that combines several consumers in declaration order, and each
-- subtask's watermark targets (which consumer valve channel it feeds). Methods of the job
-- (weir.run mixes them into Job).
local C = require("weir.ffi")
local keys = require("weir.keys")

local ffi = require("ffi")

local EV_RANGE = tonumber(C.WEIR_EV_RANGE)
-- slots of a hash exchange's memo of number keys' subtasks (a power of two)
local HASH_MEMO = 16384

local M = {}
local Job = {}
M.methods = Job

---The function that sends an operator's output over one consumer edge.
function Job:sender(consumer)
  local d = consumer.node
  local port = d.inputs[consumer.port]
  local push = port.push or d.push -- a two-input operator's side (weir.connect)
  if port.mode == "forward" then
    return push
  elseif port.mode == "rebalance" then
    local counters = {}
    for st = 0, port.node.parallelism - 1 do
      counters[st] = d.parallelism - 1 -- so each upstream subtask starts at subtask 0
    end
    -- checkpoints keep where each round robin stands (weir.checkpoint_job)
    self.rebalance_counters[#self.rebalance_counters + 1] = { from = port.node, to = d,
                                                              counters = counters }
    local nexts = {}
    for c = 0, d.parallelism - 1 do
      nexts[c] = (c + 1) % d.parallelism
    end
    return self:generate(d, "rebalance", false, push, nexts, counters)
  end
  if port.partitioned then -- key_by(fn, { partitioned = true }): its claim checked on a sample
    push = require("weir.copartition").wrap(port, d, push)
  end
  local maxp = d.max_parallelism
  local to_subtask = {}
  for kg = 0, maxp - 1 do
    to_subtask[kg] = C.weir_keygroup_subtask(kg, maxp, d.parallelism)
  end
  local function slow_group(k)
    local h, why = keys.java_hash(k)
    if not h then
      keys.bad_key(k, why)
    end
    return C.weir_keygroup_of(h, maxp)
  end
  local f
  if d.parallelism == 1 then
    f = self:generate(d, "hash1", false, push, port.key_fn, slow_group)
  else
    -- the number keys' memo (codegen's hash template): 16,384 slots (160 KiB per exchange),
    -- filled with the keys 0 to 16,383 so that a job's first records (which LuaJIT's trace
    -- is recorded on) find their small whole-number keys there as later ones do
    local memo_k = ffi.new("double[?]", HASH_MEMO)
    local memo_s = ffi.new("int16_t[?]", HASH_MEMO)
    assert(C.weir_keygroup_fill_memo(memo_k, memo_s, HASH_MEMO, maxp, d.parallelism) == 0)
    f = self:generate(d, "hash", false, push, port.key_fn, maxp, C, to_subtask, slow_group,
                      memo_k, memo_s, HASH_MEMO - 1)
  end
  self.senders[f] = d
  self.key_sites[f] = port.key_at -- the key_by call's script line, for a failing selector
  -- --group: crosses processes (a two-input operator's key_by keeps the rule key group = input
  -- partition: its repartition is not built)
  if self.plan.env.job.group and not port.partitioned and #d.inputs == 1 then
    return require("weir.repartition").sender(self, consumer, f)
  end
  return f
end

local function noop() end

-- Output counts (job.out_count, the metrics' records_out) without a store per record: a sink
-- fed by a generator (or from_elements, nexmark_bids) through nothing but map operators, one
-- input and one main consumer at each step, gets exactly one call per record the source
-- delivers. Such a sink does not count (node.out_derived: its template drops the count); the
-- dispatch adds a batch's records when it delivers them, and a failure takes back what it
-- stopped (Job:uncount, from Job:failed).
local DERIVED_SINKS = { fn = true, print = true, collect = true, write_text = true }
local DERIVED_SOURCES = { generate = true, elements = true, nexmark = true }

---Marks the sinks whose outputs are counted from their source's batches (see above): sets
---src.out_sink (that sink) and src.out_path (the nodes before it) on their sources.
function Job:derive_out_counts()
  for _, src in ipairs(self.plan.sources) do
    src.out_sink, src.out_path = false, false
    local path, cur = { [src] = true }, DERIVED_SOURCES[src.source] and src
    while cur do
      local main
      for _, c in ipairs(cur.consumers) do
        if not c.tag then
          main = not main and c or false -- two main consumers: a fan-out
        end
      end
      local d = main and main.node
      if not d or #d.inputs ~= 1 then
        break
      elseif d.kind == "sink" then
        if DERIVED_SINKS[d.sink] then
          d.out_derived = true
          src.out_sink, src.out_path = d, path
        end
        break
      elseif d.kind == "map" then
        path[d] = true
        cur = d
      else
        break
      end
    end
  end
end

---A failure stopped src's batch (event e) at record i: the records after it never reached the
---sink counted from src's batches, nor did record i unless the sink itself failed; they are
---taken back from the output count (a routed failure's resume counts the rest again).
function Job:uncount(src, e, i, info)
  local sink = src.out_sink
  if sink then
    local last = e.kind == EV_RANGE and e.index + e.len - 1 or e.len - 1
    local back = last - i + (info.node == sink and 0 or 1)
    self.out_count[1] = self.out_count[1] - back
  end
end

---Combines the senders of several consumers (in declaration order) into one function.
function Job:combine(node, senders)
  if #senders == 0 then
    return noop
  elseif #senders == 1 then
    return senders[1]
  end
  return self:generate(node, "fanout:" .. #senders, false, unpack(senders))
end

---Wires a node's outputs: main and side senders, and each subtask's watermark targets.
function Job:outputs(node)
  local main, side = {}, {}
  for _, c in ipairs(node.consumers) do
    local s = self:sender(c)
    if c.tag then
      side[c.tag.id] = side[c.tag.id] or {}
      table.insert(side[c.tag.id], s)
    else
      main[#main + 1] = s
    end
  end
  node.emit = self:combine(node, main)
  node.side = {}
  for id, list in pairs(side) do
    node.side[id] = self:combine(node, list)
  end
  for _, inst in ipairs(node.instances) do
    local wm = {}
    for _, c in ipairs(node.consumers) do
      local d = c.node
      local port = d.inputs[c.port]
      if port.mode == "forward" then
        wm[#wm + 1] = { d.instances[inst.index + 1], port.offset }
      else
        for _, di in ipairs(d.instances) do
          wm[#wm + 1] = { di, port.offset + inst.index }
        end
      end
    end
    inst.wm_targets = wm
  end
end


-- set-up code, never traced (weir.codegen, "Set-up code")
jit.off(true) -- this chunk too: its loops run once
for _, f in ipairs({ Job.sender, Job.combine, Job.outputs, Job.derive_out_counts }) do
  jit.off(f)
end

return M
