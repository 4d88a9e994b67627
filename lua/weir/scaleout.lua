-- weir.scaleout: the state of a `weir run --group NAME` process, per input partition (issue 19
-- item 2; docs/ARCHITECTURE.md, Scale-out). The rule: **a key group is an input partition**.
-- With --group every keyed operator's max_parallelism is the source topic's partition count P,
-- so Flink's key group of a key (the hash exchange's) numbers a partition, and the input must
-- be partitioned by it (a producer sends key k to partition weir.key_group(k, P)); a snapshot
-- finding state in a key group whose partition the process does not own fails the job, naming
-- it. Partition p's snapshot is a state file (weir.checkpoint's format) of the keyed parts'
-- key group p sections plus a "source" section (its next offset, generator and emitter),
-- written to the state topic `NAME-state` (runtime/kafka_state.c) every checkpoint interval,
-- at a cooperative revoke (the hand-off, acknowledged before the revoke finishes) and at the
-- end. An assignment reads the partition's latest snapshot, puts its key group back into the
-- running operators (their restores add), restores its generator and emitter, lowers the
-- job's watermarks to the partition's (so its records are not late here: the process's event
-- time becomes the minimum over what it owns, as a restart from these snapshots would), and
-- starts the partition at the snapshot's offset. A revoke or loss drops the partition's key
-- group: every keyed part holding state in it is reset and given back the groups still owned
-- (the cost is that part's whole state, not the group's). Operator state that
-- is not keyed (rich functions' snapshot_state) stays with the process. Set-up code: nothing
-- here runs per record.
local ffi = require("ffi")
local C = require("weir.ffi")
local checkpoint = require("weir.checkpoint")
local watermarks = require("weir.watermarks")
local failure = require("weir.failure")
local duration = require("weir.duration")

local M = {}
local INF = math.huge

---weir.key_group(key, n): Flink's key group of key under max parallelism n (0 .. n-1: murmur
---of the key's Java hashCode, as key_by routes it). With --group, the partition a producer
---sends key to.
function M.key_group(key, n)
  if type(n) ~= "number" or n ~= math.floor(n) or n < 1 or n > 32768 then
    error(("weir.key_group: n must be an integer from 1 to 32768, got %s"):format(tostring(n)),
      2)
  end
  local keys = require("weir.keys")
  local h, why = keys.java_hash(key)
  if not h then
    error(("weir.key_group: %s"):format(tostring(why)), 2)
  end
  return tonumber(C.weir_keygroup_of(h, n))
end
local job_error = failure.job_error
local DEFAULT_INTERVAL_MS = 10000

local function say(fmt, ...)
  C.weir_out_flush()
  io.stderr:write("weir: " .. fmt:format(...) .. "\n")
end

---The keyed operators of a job (their state is cut by key group).
local function keyed_nodes(job)
  local out = {}
  for _, node in ipairs(job.plan.nodes) do
    local first = node.instances and node.instances[1]
    if (first and first.kstate and node.states) or (node.kind == "window" and node.keyed) then
      out[#out + 1] = node
    end
  end
  return out
end
M.keyed_nodes = keyed_nodes

---The rule's precondition, checked at the join: a single topic, and max_parallelism = its
---partition count on every keyed operator. Returns nil, or the usage message.
function M.check_rule(group, nodes, topics, nparts)
  if #nodes == 0 then
    return nil
  end
  if #topics ~= 1 then
    return ("--group %s: a keyed job reads one topic (a key group is a partition of it); "
      .. "this one reads %d"):format(group, #topics)
  end
  for _, node in ipairs(nodes) do
    if node.max_parallelism ~= nparts then
      return ("--group %s: %s has max_parallelism %s; with --group a key group is a partition "
        .. "of %s, so it must be the partition count %d (weir.env{ max_parallelism = %d }), and "
        .. "producers send key k to partition weir.key_group(k, %d)"):format(group, node.label,
        tostring(node.max_parallelism), topics[1], nparts, nparts, nparts)
    end
  end
  return nil
end

---The partition slot of a part's key group kg: kg itself, or behind a repartition the slot of
---the repartition partition kg (part.kg_slots, weir.repartition).
local function slot_of(part, kg)
  local m = part.kg_slots
  if m then
    return kg >= 0 and m[kg] or -1
  end
  return kg
end
M.slot_of = slot_of

---The key group of a part that partition slot p holds (nil: none).
local function kg_at(part, p)
  local m = part.kg_slots
  if m then
    for kg, s in pairs(m) do
      if s == p then return kg end
    end
    return nil
  end
  return p
end

---Sections of partition slot p from the keyed parts' values (vals[i] = {[kg] = value}), plus
---the source's section src: what partition p's snapshot holds.
function M.partition_sections(kparts, vals, p, src)
  local out = { { name = "source", key_group = -1, value = src } }
  for i, part in ipairs(kparts) do
    local kg = kg_at(part, p)
    local v = kg and vals[i][kg]
    if v ~= nil then
      out[#out + 1] = { name = part.name, key_group = kg, value = v, raw = part.raw }
    end
  end
  return out
end

---A section that holds nothing (a window part writes one empty section when nothing is open).
local function empty(v)
  return type(v) == "table" and v.nkeys == 0
end

---Key groups with state that are not owned: {kg, part name} of the first, or nil.
function M.stray(kparts, vals, owned)
  for i, part in ipairs(kparts) do
    for kg, v in pairs(vals[i]) do
      if kg >= 0 and not owned[slot_of(part, kg)] and not empty(v) then
        return kg, part.name
      end
    end
  end
  return nil
end

local SO = {}
SO.__index = SO

---The scale-out state of a group member: job, its Kafka source node, the group's name.
function M.new(job, node, group)
  local o = job.plan.env.job
  local interval = DEFAULT_INTERVAL_MS
  if o.checkpoint_interval then
    local ok, ms = pcall(duration.parse, o.checkpoint_interval, "--checkpoint-interval")
    if not ok or ms < 0 then
      error({ usage = true, msg = ("--checkpoint-interval: invalid duration %q"):format(
        o.checkpoint_interval) }, 0)
    end
    interval = ms
  end
  local nodes = keyed_nodes(job)
  local why = M.check_rule(group, nodes, node.topics, node.input_nparts or #node.kafka_parts)
  if why then
    error({ usage = true, msg = why }, 0)
  end
  for _, n in ipairs(job.plan.nodes) do
    if n.rich and type(n.fn) == "table" and type(n.fn.snapshot_state) == "function" then
      -- operator state that is not keyed follows no partition (docs/API.md, Scale-out)
      say("--group %s: %s has snapshot_state (operator state, not keyed): it is in no "
        .. "partition's snapshot, so it stays with this process and is lost when the process "
        .. "stops; keep the state keyed (keyed state moves with its partition)", group, n.label)
    end
  end
  local topic = group .. "-state"
  local conf = {}
  for _, kv in ipairs(node.properties) do
    -- the consumer's properties that a producer and reader take too (security, timeouts)
    if kv[1]:match("^security%.") or kv[1]:match("^sasl%.") or kv[1]:match("^ssl%.") then
      conf[#conf + 1] = kv[1]
      conf[#conf + 1] = kv[2]
    end
  end
  local err = ffi.new("char[512]")
  local h = C.weir_kafka_state_open(node.bootstrap_servers, topic, #node.kafka_parts,
    ffi.new("const char *[?]", #conf + 1, conf), #conf, node.timeout, err, 512)
  if h == nil then
    job_error(("--group %s: %s"):format(group, ffi.string(err)))
  end
  return setmetatable({ job = job, node = node, group = group, topic = topic,
    store = ffi.gc(h, C.weir_kafka_state_close), interval = interval, next_due = -INF,
    id = 0, registry = false, kparts = false, owned = {}, box = ffi.new("double[3]"),
    timeout = node.timeout, written = 0, bytes = 0 }, SO)
end

---The keyed parts of the job's checkpoint registry (made at the first use: open() has run).
function SO:parts()
  if not self.kparts then
    local parts = require("weir.checkpoint_parts")
    require("weir.checkpoint_job").assign_uids(self.job.plan)
    local ck = { job = self.job, restored_sources = {}, shift_ms = 0,
                 opts = self.job.plan.env.job }
    self.registry = parts.registry(ck)
    self.kparts = {}
    for _, part in ipairs(self.registry.parts) do
      if part.keyed then
        self.kparts[#self.kparts + 1] = part
        part.kg_slots = require("weir.repartition").part_slots(self.job, part)
      end
    end
  end
  return self.kparts
end

---Every keyed part's value now ({[kg] = value} each).
function SO:values()
  local vals = {}
  for i, part in ipairs(self:parts()) do
    vals[i] = part.snapshot()
  end
  return vals
end

---The source's section of partition slot s.
function SO:source_section(s)
  local node, rt = self.node, self.job.rt
  local p = node.kafka_parts[s + 1]
  local v = { topic = p.topic, partition = p.id,
              offset = C.weir_kafka_next_offset(rt, node.src_id, s) }
  if node.rep_of and node.rep_of[s] then -- a repartition partition: its valve's channels
    v.repart = require("weir.repartition").snapshot_slot(node, s)
  elseif node.kafka_gens then
    v.gen = watermarks.snapshot_generator(node.kafka_gens[s])
    v.emitter = watermarks.snapshot_emitter(node.kafka_emitters[s])
    v.released = p.released
  end
  return v
end

---Writes the snapshots of partition slots list (waiting for the acknowledgement).
function SO:write(list, vals)
  if #list == 0 then
    return
  end
  vals = vals or self:values()
  local kparts, node = self:parts(), self.node
  local owned = {}
  for s in pairs(self.owned) do
    owned[s] = true
  end
  for _, s in ipairs(list) do
    owned[s] = true
  end
  local kg, name = M.stray(kparts, vals, owned)
  if kg then
    job_error(("--group %s: %s holds state in key group %d, but partition %s/%d is not this "
      .. "process's: the input is not partitioned by key (a key k must arrive in partition "
      .. "weir.key_group(k, %d); docs/API.md, Scale-out)"):format(self.group, name, kg,
      node.kafka_parts[1].topic, kg, #node.kafka_parts))
  end
  -- the output before the snapshot is written first (stdout flushed for print, write_text
  -- flushed, Kafka sinks acknowledged): what a restore repeats is only what came after it
  -- (at-least-once); a print line left in the buffer would be lost by a kill -9
  C.weir_out_flush()
  for _, part in ipairs(self.registry.parts) do
    if part.name:match("^sink/") then
      part.snapshot()
    end
  end
  require("weir.repartition").flush(self.job) -- the records sent to repartition topics too
  self.id = self.id + 1
  for _, s in ipairs(list) do
    local secs = M.partition_sections(kparts, vals, s, self:source_section(s))
    local bytes = checkpoint.encode_state(self.id, secs)
    local part = node.kafka_parts[s + 1]
    if C.weir_kafka_state_put(self.store, part.topic, part.id, self.id, bytes, #bytes) ~= 0 then
      job_error(("--group %s: writing the snapshot of %s/%d: %s"):format(self.group, part.topic,
        part.id, ffi.string(C.weir_kafka_state_error(self.store))))
    end
    self.written = self.written + 1
    self.bytes = self.bytes + #bytes
  end
  if C.weir_kafka_state_flush(self.store, self.timeout) ~= 0 then
    job_error(("--group %s: the state topic %s: %s"):format(self.group, self.topic,
      ffi.string(C.weir_kafka_state_error(self.store))))
  end
end

---The owned slots, sorted.
function SO:owned_list()
  local list = {}
  for s in pairs(self.owned) do
    list[#list + 1] = s
  end
  table.sort(list)
  return list
end

---After a batch: the periodic snapshot of every owned partition, when due.
function SO:maybe_checkpoint()
  local now = self.job:now()
  if now < self.next_due then
    return
  end
  self.next_due = now + self.interval
  self:write(self:owned_list())
end

---Lowers every watermark of the job (the source's valve, each operator subtask's watermark,
---valves and emitters) to w: a partition restored with watermark w is not late here.
function SO:lower(w)
  local node = self.node
  if node.kafka_valve then
    local v = node.kafka_valve
    if C.weir_valve_output(v) > w then
      C.weir_valve_restore(v, -1, w, C.weir_valve_is_idle(v))
    end
  end
  for _, n in ipairs(self.job.plan.nodes) do
    for st, inst in ipairs(n.instances or {}) do
      if inst.watermark and inst.watermark > w then
        inst.watermark = w
        if n.watermark_lowered then -- a window operator's caches (weir.windowing)
          n.watermark_lowered(inst)
        end
      end
      -- the channels this subtask feeds (each consumer's valve input)
      for _, t in ipairs(inst.wm_targets or {}) do
        local valve, c = t[1].valve, t[2]
        if valve and C.weir_valve_channel_watermark(valve, c) > w then
          C.weir_valve_restore(valve, c, w, C.weir_valve_channel_state(valve, c))
        end
      end
      local valve = inst.valve
      if valve and C.weir_valve_output(valve) > w then
        C.weir_valve_restore(valve, -1, w, C.weir_valve_is_idle(valve))
      end
      local em = n.emitters and n.emitters[st - 1]
      if em and em.current > w then
        em.current = w
      end
    end
  end
  for _, inst in ipairs(node.instances) do
    if inst.watermark > w then
      inst.watermark = w
    end
  end
end

---Assignment of slots (before its finish): each partition's latest snapshot restored; returns
---the offsets to start at (-1: none found) and what was restored, for the message.
function SO:assign(slots)
  local node, kparts = self.node, self:parts()
  local by_name = {}
  for _, part in ipairs(kparts) do
    by_name[part.name] = part
  end
  local offsets, low = {}, INF
  for i, s in ipairs(slots) do
    offsets[i] = -1
    local part = node.kafka_parts[s + 1]
    local blob = C.weir_kafka_state_read1(self.store, part.topic, part.id, self.box)
    if self.box[0] == -2 then
      job_error(("--group %s: reading the snapshot of %s/%d: %s"):format(self.group,
        part.topic, part.id, ffi.string(C.weir_kafka_state_error(self.store))))
    end
    if self.box[2] > 0 then
      say("%s: %s/%d: %d newer snapshot(s) of it are broken (%s): the last complete one is "
        .. "used", node.label, part.topic, part.id, self.box[2],
        ffi.string(C.weir_kafka_state_error(self.store)))
    end
    if blob ~= nil then
      local id = self.box[0]
      local bytes = ffi.string(blob, self.box[1])
      C.weir_kafka_state_blob_free(blob)
      local secs, why = checkpoint.decode_state(bytes, id)
      if not secs then
        job_error(("--group %s: the snapshot %d of %s/%d does not decode: %s"):format(
          self.group, id, part.topic, part.id, why))
      end
      local src
      for _, sec in ipairs(secs) do
        if sec.name == "source" then
          src = sec.value
        elseif by_name[sec.name] then
          by_name[sec.name].restore({ [sec.key_group] = sec.value })
        elseif not self.job.plan.env.job.allow_non_restored_state then
          job_error(("--group %s: the snapshot of %s/%d holds %s, which this job does not "
            .. "have (--allow-non-restored-state drops it)"):format(self.group, part.topic,
            part.id, sec.name))
        end
      end
      offsets[i] = src.offset
      if node.rep_of and node.rep_of[s] then
        local w, idle = require("weir.repartition").assign_slot(node, s, src.repart)
        if not idle then
          low = math.min(low, w)
        end
      elseif src.gen and node.kafka_gens then
        local ok, err = pcall(watermarks.restore_generator, node.kafka_gens[s], src.gen, 0)
        if not ok then
          job_error(("%s: partition %d: %s"):format(node.label, part.id, tostring(err)))
        end
        watermarks.restore_emitter(node.kafka_emitters[s], src.emitter)
        -- a partition its last owner finished (at its stop offset) holds nothing back
        part.released = src.released or (part.stop >= 0 and src.offset >= part.stop)
        local idle = src.emitter.idle or part.released
        -- state bits: 1 active, 2 aligned (it counts: the output is lowered to it below)
        C.weir_valve_restore(node.kafka_valve, s, src.emitter.current, idle and 0 or 3)
        if not idle then
          low = math.min(low, src.emitter.current)
        end
      end
    elseif node.rep_of and node.rep_of[s] then
      low = math.min(low, (require("weir.repartition").assign_slot(node, s, nil)))
    elseif node.kafka_gens then
      low = -INF -- a fresh partition starts at the bottom
    end
    self.owned[s] = true
  end
  if low < INF then
    self:lower(low)
  end
  return offsets
end

---Revoke (hand-off: write first) or loss (no write) of slots, before its finish: their key
---groups are dropped from the running operators.
function SO:give_up(slots, write)
  local vals = self:values()
  if write then
    self:write(slots, vals)
  end
  for _, s in ipairs(slots) do
    self.owned[s] = nil
  end
  for i, part in ipairs(self:parts()) do
    -- a part with nothing in the groups given up is left as it is
    local hit = false
    for _, s in ipairs(slots) do
      local v = vals[i][s]
      hit = hit or (v ~= nil and not empty(v))
    end
    local keep = {}
    for kg, v in pairs(vals[i]) do
      if kg < 0 or self.owned[slot_of(part, kg)] then
        keep[kg] = v
      end
    end
    if hit and part.reset then
      part.reset()
      if next(keep) ~= nil then
        part.restore(keep)
      end
    end
  end
end

---The job's end (or stop): the last snapshots of every owned partition.
function SO:final()
  self:write(self:owned_list())
end

jit.off(true)
for _, f in pairs(M) do
  if type(f) == "function" then jit.off(f) end
end
for _, f in pairs(SO) do
  if type(f) == "function" then jit.off(f) end
end

return M
