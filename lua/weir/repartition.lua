-- weir.repartition: in `--group` mode, a key_by without `partitioned = true` crosses processes
-- through the internal topic `<group>-repartition-<uid>` (issue 19 items 3 and 4; docs/API.md,
-- Scale-out; docs/ARCHITECTURE.md, "Repartition topics and watermarks"), as Kafka Streams does.
--
-- The upstream stage (the source's operators up to the key_by) writes each record to the
-- topic's partition r = the key's key group under max parallelism R (the topic's partition
-- count, which must be the job's max_parallelism), value = { record, timestamp } in the
-- checkpoint codec (string.buffer, weir.ckvalue's markers for records and json.null), Kafka
-- timestamp = the record's; no message key. The group member subscribes to the repartition
-- topics with the input (one subscription), so the owner of partition r reads it and feeds its
-- records to the key_by's operator through the hash exchange (its key group is r).
--
-- Watermarks (item 4): after each batch, for every input partition u it owns, the upstream
-- side writes a control record (message key "wm/u", value { u, watermark, idle }) to every
-- repartition partition when u's watermark (its channel in the source's valve: its emitter's)
-- or its status changed since it last wrote one; a finished partition writes +inf; before a
-- record of a partition last said idle it says active (Flink: a source output becomes active
-- before a record). Kafka keeps the order per partition, so a control record follows every
-- record written before it. The owner of r keeps a valve (valve.c: StatusWatermarkValve) of
-- one channel per upstream partition — every partition of the input topic, from metadata — so
-- r's watermark is their minimum, idle ones left out, and an upstream partition between owners
-- (silent) holds it back. The owned r's meet in a second valve whose output feeds the key_by
-- operator's input channels (instead of the upstream operator's watermark). r's snapshot (its
-- source section in the state topic) keeps its valve's channels. Control records never reach
-- user code. With a bounded input, r is done once its valve's output is +inf.
--
-- What is built: one repartition per job (the operators before it record-at-a-time: map,
-- filter, flat_map, process) into an operator with one input; a key_by into a two-input
-- operator (connect, joins, a keyed union) keeps the rule key group = input partition.
-- Set-up code, except the senders and the routes, which run per record.
local ffi = require("ffi")
local bit = require("bit")
local buffer = require("string.buffer")
local C = require("weir.ffi")
local keys = require("weir.keys")
local ckvalue = require("weir.ckvalue")
local failure = require("weir.failure")
local format = require("weir.format")
local timeflow = require("weir.timeflow")

local M = {}
local INF = math.huge
local job_error = failure.job_error
-- a repartition slot's stop offset while the input is bounded: done only when finished here
local BOUNDED_STOP = 9.0e15 - 1

-- operators a stage before a repartition may have (one record in, records out at once)
local RECORD_AT_A_TIME = { map = true, filter = true, flat_map = true, process = true }

---The topic of a repartition into node d of group `group`.
function M.topic(group, d)
  return group .. "-repartition-" .. d.ckpt_uid
end

---Job:sender for a hash edge in --group mode without partitioned = true: inner is the edge's
---hash sender (the downstream side); returns the upstream side, which writes to the topic.
function M.sender(job, consumer, inner)
  local d = consumer.node
  local port = d.inputs[consumer.port]
  local reps = job.repartitions
  if not reps then
    reps = {}
    job.repartitions = reps
  end
  local e = { d = d, port = port, u = port.node, inner = inner, keyf = port.key_fn,
              R = 0, sink = false, topic = false, src = false, slots = {}, valves = {},
              rv = false, targets = {}, sent = {}, finished = {}, owned = {}, bounded = false,
              in_slots = {}, pid_of = {}, seen = {} }
  reps[#reps + 1] = e
  -- the source feeding the key_by marks the partition of the record it pushes (weir.kafka)
  local src = port.node
  while src.kind ~= "source" and src.inputs[1] do
    src = src.inputs[1].node
  end
  if src.kind == "source" and src.source == "kafka" then
    src.kafka_cur = src.kafka_cur or ffi.new("double[2]", -1, -1)
    e.src = src
  end
  local cur = src.kafka_cur or ffi.new("double[2]", -1, -1)
  local last_off, seq = -1, 0
  local keyf, encode, keep, sent = port.key_fn, buffer.encode, ckvalue.keep, e.sent
  local send = M.send
  local f = function(_, v, ts)
    local k = keyf(v)
    local h, why = keys.java_hash(k)
    if not h then
      keys.bad_key(k, why)
    end
    local r = tonumber(C.weir_keygroup_of(h, e.R))
    local s, u, off = cur[0], -1, cur[1]
    if s >= 0 then
      u = e.pid_of[s]
      local last = sent[u]
      if last and last.idle then
        M.control(e, u, last.w, false) -- active again before its record
      end
      -- (u, offset, n-th record from it): a record sent again after a restore is known
      if off ~= last_off then
        last_off, seq = off, 0
      end
      seq = seq + 1
    end
    local kv, bad = keep(v, "record")
    if kv == nil then
      error(("the record cannot be written to the repartition topic %s: %s"):format(e.topic,
        tostring(bad)), 0)
    end
    send(e, r, nil, encode({ kv, ts, u, off, seq }), ts or -1)
  end
  job.senders[f] = d
  job.key_sites[f] = port.key_at
  return f
end

---Sends payload to partition r of e's topic (key: nil or a string).
function M.send(e, r, key, payload, ts)
  local kn = key and #key or -1
  if C.weir_kafka_sink_send_ts(e.sink, key, kn, payload, #payload, r, ts) ~= 0 then
    job_error(("%s: the repartition topic %s: %s"):format(e.d.label, e.topic,
      ffi.string(C.weir_kafka_sink_error(e.sink))))
  end
end

---Writes upstream partition u's control record (watermark w, idle) to every partition of e's
---topic, and remembers it.
function M.control(e, u, w, idle)
  local payload = buffer.encode({ u, w, idle })
  local key = "wm/" .. u
  for r = 0, e.R - 1 do
    M.send(e, r, key, payload, -1)
  end
  e.sent[u] = { w = w, idle = idle }
end

---The topics the group member subscribes to: the input's and the repartition topics.
function M.subscription(job, node)
  local topics = {}
  for i, t in ipairs(node.topics) do
    topics[i] = t
  end
  if job.repartitions then
    require("weir.checkpoint_job").assign_uids(job.plan)
    for _, e in ipairs(job.repartitions) do
      e.topic = M.topic(job.plan.env.job.group, e.d)
      topics[#topics + 1] = e.topic
      M.producer(job, node, e)
    end
  end
  return topics
end

---e's producer, and its topic made where the cluster can (CreateTopics) when there is none.
function M.producer(job, node, e)
  local group = job.plan.env.job.group
  local conf = { "bootstrap.servers", node.bootstrap_servers, "enable.idempotence", "true",
                 "linger.ms", "5" }
  for _, kv in ipairs(node.properties) do
    if kv[1]:match("^security%.") or kv[1]:match("^sasl%.") or kv[1]:match("^ssl%.") then
      conf[#conf + 1] = kv[1]
      conf[#conf + 1] = kv[2]
    end
  end
  local err = ffi.new("char[512]")
  local sink = C.weir_kafka_sink_new(ffi.new("const char *[?]", #conf, conf), #conf, e.topic,
    err, 512)
  if sink == nil then
    job_error(("--group %s: the repartition topic %s: %s"):format(group, e.topic,
      ffi.string(err)))
  end
  e.sink = ffi.gc(sink, C.weir_kafka_sink_free)
  local n = C.weir_kafka_sink_ensure_topic(e.sink, e.d.max_parallelism, node.timeout)
  if n < 0 then
    job_error(("--group %s: the repartition topic %s: %s"):format(group, e.topic,
      ffi.string(C.weir_kafka_sink_error(e.sink))))
  elseif n == 0 then
    M.missing(job, "topic " .. e.topic .. ": no such topic")
  end
end

local function usage(fmt, ...)
  error({ usage = true, msg = fmt:format(...) }, 0)
end

---What is built (the checks at the start): one repartition per job, record-at-a-time
---operators before it (an operator with two inputs is never repartitioned: weir.exchange).
local function check_shape(job, e, group)
  if #job.repartitions > 1 then
    usage("--group %s: the job has %d key_by that repartition (without partitioned = true); "
      .. "one is built (docs/API.md, Scale-out)", group, #job.repartitions)
  end
  local n = e.u
  while n.kind ~= "source" do
    if not RECORD_AT_A_TIME[n.kind] or (n.inputs[1] and n.inputs[1].mode == "hash")
        or #n.inputs ~= 1 then
      usage("--group %s: %s comes before a key_by that repartitions; the operators before one "
        .. "must be map, filter, flat_map or process (not keyed)", group, n.label)
    end
    n = n.inputs[1].node
  end
end

---The member's open failed with msg: when it names a repartition topic as missing, the error
---says which key_by it is for and how to make it.
function M.missing(job, msg)
  for _, e in ipairs(job.repartitions or {}) do
    if msg:find("topic " .. e.topic .. ": no such topic", 1, true) then
      local n = e.d.max_parallelism
      job_error(("--group %s: the repartition topic %s (for %s) does not exist, and the cluster "
        .. "did not create it: create it with %d partitions (the job's max_parallelism), e.g. "
        .. "weir kafka-mock --topic %s:%d, or kafka-topics.sh --create --topic %s "
        .. "--partitions %d"):format(job.plan.env.job.group,
        e.topic, e.d.label, n, e.topic, n, e.topic, n))
    end
  end
end

local function count_topic(node, topic)
  local n = 0
  for _, p in ipairs(node.kafka_parts) do
    if p.topic == topic then
      n = n + 1
    end
  end
  return n
end

---After the source's open (its partitions known), before its driver: every repartition's
---slots, producer, valves and routes; returns the routes by slot for the driver (or false).
function M.setup(job, node)
  local reps = job.repartitions
  if not reps then
    return false
  end
  local group = job.plan.env.job.group
  local P = count_topic(node, node.topics[1])
  node.input_nparts = P
  local routes, rep_of = {}, {}
  node.rep_of = rep_of
  for _, e in ipairs(reps) do
    check_shape(job, e, group)
    local R = count_topic(node, e.topic)
    if R == 0 then
      M.missing(job, "topic " .. e.topic .. ": no such topic")
    end
    if R ~= e.d.max_parallelism then
      job_error(("--group %s: the repartition topic %s has %d partitions; a key group behind it "
        .. "is one of them, so it must have the job's max_parallelism, %d"):format(group,
        e.topic, R, e.d.max_parallelism))
    end
    e.R, e.P = R, P
    e.bounded = node.stopping_offsets ~= nil
    e.rv = ffi.gc(C.weir_valve_new(R), C.weir_valve_free)
    for r = 0, R - 1 do
      C.weir_valve_status(e.rv, r, 1) -- not owned: left out
    end
    for s, p in ipairs(node.kafka_parts) do
      if p.topic == node.topics[1] then
        e.in_slots[p.id], e.pid_of[s - 1] = s - 1, p.id
      end
      if p.topic == e.topic then
        local slot, r = s - 1, p.id
        e.slots[r] = slot
        e.valves[r] = ffi.gc(C.weir_valve_new(P), C.weir_valve_free)
        rep_of[slot] = { e = e, r = r }
        p.stop = e.bounded and BOUNDED_STOP or -1
        if C.weir_kafka_set_range(job.rt, node.src_id, slot, p.start, p.stop) ~= 0 then
          job_error(("%s: %s"):format(node.label, ffi.string(C.weir_rt_error(job.rt))))
        end
        routes[slot] = M.route(e, r)
      end
    end
    -- the key_by operator's input channels: fed from the owned partitions' valves (below),
    -- no longer from the upstream operator, whose watermark is this process's only
    for _, inst in ipairs(e.u.instances) do
      local keep = {}
      for _, t in ipairs(inst.wm_targets) do
        if t[1].node == e.d then
          e.targets[#e.targets + 1] = t
        else
          keep[#keep + 1] = t
        end
      end
      inst.wm_targets = keep
    end
    e.down = { wm_targets = e.targets }
  end
  return routes
end

---The combined valve's change (flags) goes to the key_by operator's input channels.
local function forward(e, flags)
  if bit.band(flags, 1) ~= 0 then
    timeflow.forward_watermark(e.down, C.weir_valve_output(e.rv))
  end
  if bit.band(flags, 2) ~= 0 then
    timeflow.forward_status(e.down, C.weir_valve_is_idle(e.rv) == 1)
  end
end

---Partition r's valve changed: its output into the combined valve's channel r (when owned).
local function update(e, r)
  if not e.owned[r] then
    return
  end
  local v = e.valves[r]
  local idle = C.weir_valve_is_idle(v) == 1
  local f1 = C.weir_valve_watermark(e.rv, r, C.weir_valve_output(v))
  local f2 = C.weir_valve_status(e.rv, r, idle and 1 or 0)
  if f1 > 0 or f2 > 0 then
    forward(e, bit.bor(f1, f2))
  end
end

---The driver's route for slot of repartition partition r: a control record into r's valve, a
---record to the key_by operator.
function M.route(e, r)
  local decode, thaw, inner, str = buffer.decode, ckvalue.thaw, e.inner, ffi.string
  local valves, seen = e.valves, e.seen
  seen[r] = {}
  return function(ev, m)
    local t = decode(str(ev.ptr, ev.len))
    if m.key ~= nil then
      local v = valves[r] -- (an assignment makes it anew)
      local u, w, idle = t[1], t[2], t[3]
      if u >= 0 and u < e.P then
        if idle then
          C.weir_valve_watermark(v, u, w)
          C.weir_valve_status(v, u, 1)
        else
          C.weir_valve_status(v, u, 0)
          C.weir_valve_watermark(v, u, w)
        end
        update(e, r)
      end
      return
    end
    -- a record of upstream partition u at or before the last one taken from it: sent again by
    -- u's next owner, which restored u's snapshot and read it again from there (dropped)
    local u, off, n = t[3], t[4], t[5]
    if u >= 0 then
      local sr = seen[r]
      local so = sr[u]
      if so and (off < so or (off == so and n <= sr[-1 - u])) then
        return
      end
      sr[u], sr[-1 - u] = off, n
    end
    inner(0, thaw(t[1]), t[2])
  end
end

---After each batch: the control records of the owned input partitions whose watermark or
---status changed; repartition partitions whose upstream all ended are done.
function M.after_batch(job, node)
  local rt, id, valve = job.rt, node.src_id, node.kafka_valve
  for _, e in ipairs(job.repartitions) do
    for u = 0, e.P - 1 do
      local s = e.in_slots[u]
      if C.weir_kafka_owned(rt, id, s) == 1 then
        local part = node.kafka_parts[s + 1]
        local w, idle = -INF, false
        if part.released then
          w = INF
        elseif valve then
          w = C.weir_valve_channel_watermark(valve, s)
          idle = bit.band(C.weir_valve_channel_state(valve, s), 1) == 0
        end
        local last = e.sent[u]
        if not last or last.w ~= w or last.idle ~= idle then
          M.control(e, u, w, idle)
        end
      end
    end
    if e.bounded then
      for r = 0, e.R - 1 do
        local s = e.slots[r]
        if e.owned[r] and not e.finished[r] and C.weir_valve_output(e.valves[r]) == INF then
          e.finished[r] = true
          C.weir_kafka_finish_part(rt, id, s)
        end
      end
    end
  end
end

---Every repartition producer's messages acknowledged (before a snapshot counts).
function M.flush(job)
  for _, e in ipairs(job.repartitions or {}) do
    if C.weir_kafka_sink_flush(e.sink, 30000) ~= 0 then
      job_error(("%s: the repartition topic %s: %s"):format(e.d.label, e.topic,
        ffi.string(C.weir_kafka_sink_error(e.sink))))
    end
  end
end

-- Snapshots (weir.scaleout: a repartition partition's source section) --------------------------

---The part of repartition slot s's snapshot: its valve's channels and, per upstream partition,
---the last record taken from it (offset, n).
function M.snapshot_slot(node, s)
  local x = node.rep_of[s]
  local v = x.e.valves[x.r]
  local ch = {}
  for u = 0, x.e.P - 1 do
    ch[u + 1] = { C.weir_valve_channel_watermark(v, u), C.weir_valve_channel_state(v, u) }
  end
  local seen = {}
  for k, at in pairs(x.e.seen[x.r]) do
    seen[#seen + 1] = { k, at }
  end
  return { channels = ch, seen = seen }
end

---Repartition slot s is assigned (its snapshot's section, or nil): its valve restored, its
---channel of the combined valve active; returns its watermark (what the job lowers to).
function M.assign_slot(node, s, snap)
  local x = node.rep_of[s]
  local e, r = x.e, x.r
  local v = ffi.gc(C.weir_valve_new(e.P), C.weir_valve_free)
  if snap then
    for u, c in ipairs(snap.channels) do
      if u <= e.P then
        C.weir_valve_restore(v, u - 1, c[1], c[2])
      end
    end
    -- the output from the channels: a watermark on the lowest active one recomputes it
    local low, any = INF, false
    for u = 0, e.P - 1 do
      if bit.band(C.weir_valve_channel_state(v, u), 1) ~= 0 then
        any = true
        low = math.min(low, C.weir_valve_channel_watermark(v, u))
      end
    end
    C.weir_valve_restore(v, -1, any and low or -INF, any and 0 or 1)
  end
  e.valves[r] = v
  local seen = {}
  for _, kx in ipairs(snap and snap.seen or {}) do
    seen[kx[1]] = kx[2]
  end
  e.seen[r] = seen
  e.owned[r] = true
  e.finished[r] = false
  local w = C.weir_valve_output(v)
  local idle = C.weir_valve_is_idle(v) == 1
  -- its channel of the combined valve: active (a status change, so the output's status
  -- follows), at its watermark, and the output lowered to it
  local f = C.weir_valve_status(e.rv, r, idle and 1 or 0)
  if not idle then
    C.weir_valve_restore(e.rv, r, w, 3)
    if C.weir_valve_output(e.rv) > w then
      C.weir_valve_restore(e.rv, -1, w, 0)
    end
  end
  if bit.band(f, 2) ~= 0 then
    forward(e, 2)
  end
  -- the key_by operator's channels go down with it (a lowered watermark only delays)
  for _, t in ipairs(e.targets) do
    local tv, c = t[1].valve, t[2]
    if tv and not idle and C.weir_valve_channel_watermark(tv, c) > w then
      C.weir_valve_restore(tv, c, w, C.weir_valve_channel_state(tv, c))
    end
  end
  return w, idle
end

---Repartition slot s was revoked or lost: its channel of the combined valve is left out.
function M.give_up_slot(node, s)
  local x = node.rep_of[s]
  x.e.owned[x.r] = false
  local f = C.weir_valve_status(x.e.rv, x.r, 1)
  if f > 0 then
    forward(x.e, f)
  end
end

---The slots of a keyed part's key groups (weir.scaleout), kg -> slot: behind a repartition
---the repartition partitions', else the input topic's; nil without a repartition (kg = slot).
function M.part_slots(job, part)
  local reps = job.repartitions
  if not reps then
    return nil
  end
  for _, e in ipairs(reps) do
    e.behind = e.behind or M.behind(e.d)
    local uid = part.name:match("^[^/]+/([^/]+)")
    if uid and e.behind[uid] then
      return e.slots
    end
  end
  return reps[1].in_slots
end

---The uids of the operators behind a repartition into d (d and what it feeds).
function M.behind(d)
  local out, stack = {}, { d }
  while #stack > 0 do
    local n = table.remove(stack)
    if not out[n.ckpt_uid] then
      out[n.ckpt_uid] = true
      for _, c in ipairs(n.consumers) do
        stack[#stack + 1] = c.node
      end
    end
  end
  return out
end

---The message's text for a record that cannot be sent (for errors).
function M.brief(v)
  return format.brief(v, 200)
end

jit.off(true)
for name, f in pairs(M) do
  if type(f) == "function" and name ~= "sender" and name ~= "route" and name ~= "send"
      and name ~= "control" then
    jit.off(f)
  end
end

return M
