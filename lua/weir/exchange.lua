-- weir.exchange: how an operator's output reaches its consumers. Owns the senders of the three
-- partitionings (forward: the consumer's push itself; rebalance: round robin; hash: Flink's key
-- groups), the fan-out that combines several consumers in declaration order, and each
-- subtask's watermark targets (which consumer valve channel it feeds). Methods of the job
-- (weir.run mixes them into Job).
local C = require("weir.ffi")
local keys = require("weir.keys")

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
    return self:generate(d, "rebalance", false, push, d.parallelism, counters)
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
    f = self:generate(d, "hash", false, push, port.key_fn, maxp, C, to_subtask, slow_group)
  end
  self.senders[f] = d
  self.key_sites[f] = port.key_at -- the key_by call's script line, for a failing selector
  return f
end

local function noop() end

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
for _, f in ipairs({ Job.sender, Job.combine, Job.outputs }) do
  jit.off(f)
end

return M
