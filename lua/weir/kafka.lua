-- weir.kafka: the Kafka source (env:kafka_source; its C side is runtime/source_kafka.c) as
-- Flink's KafkaSource: every partition of the topics assigned by the source itself, starting
-- and stopping offsets resolved per partition when the job starts, and with `watermarks` a
-- generator and an emitter per partition whose watermarks meet in a valve (Flink's
-- WatermarkOutputMultiplexer: the minimum over the active partitions, idle ones left out; a
-- finished partition is released). Owns the builder's checks (M.build), the source kind's
-- open/driver (M.kind, used by weir.sources' KINDS), the per-partition ticks and the
-- checkpoint part of the offsets (M.checkpoint_part). Set-up code, never traced, except the
-- generated driver and the per-partition emitters.
local ffi = require("ffi")
local bit = require("bit")
local C = require("weir.ffi")
local util = require("weir.util")
local duration = require("weir.duration")
local watermarks = require("weir.watermarks")
local codegen = require("weir.codegen")
local failure = require("weir.failure")
local timeflow = require("weir.timeflow")
local json = require("weir.json")
local csv = require("weir.csv")
local records = require("weir.records")
local alignment = require("weir.alignment")

local M = {}
local job_error = failure.job_error
local INF = math.huge
local KAFKA_NULL = tonumber(C.WEIR_LINE_KAFKA_NULL)

-- The builder -------------------------------------------------------------------------------

local OPTS = { bootstrap_servers = true, topics = true, group_id = true, starting_offsets = true,
  stopping_offsets = true, format = true, record = true, separator = true, watermarks = true,
  properties = true, metadata = true, timeout = true, partition_discovery = true }
M.OPTS = OPTS

local function offsets_table(what, t)
  for k, v in pairs(t) do
    if type(k) ~= "number" or k ~= math.floor(k) or k < 0 or k > 2 ^ 31 - 1 then
      util.build_error("kafka_source: %s: a table's keys are partition numbers, got %s", what,
        tostring(k))
    end
    if type(v) ~= "number" or v ~= math.floor(v) or v < 0 or v >= 2 ^ 53 then
      util.build_error("kafka_source: %s: partition %d: an offset is an integer >= 0, got %s",
        what, k, tostring(v))
    end
  end
  return t
end

---Checks env:kafka_source's options (the record options are weir.env's) into the node's fields.
function M.build(opts, fields)
  local bs = opts.bootstrap_servers
  if type(bs) ~= "string" or bs == "" then
    util.build_error("kafka_source: bootstrap_servers must be a string such as "
      .. "\"127.0.0.1:9092\" (weir kafka-mock prints one)")
  end
  local topics = opts.topics
  if type(topics) == "string" then
    topics = { topics }
  end
  if type(topics) ~= "table" or #topics == 0 then
    util.build_error("kafka_source: topics must be a topic name or a list of them")
  end
  for i, t in ipairs(topics) do
    if type(t) ~= "string" or t == "" then
      util.build_error("kafka_source: topics[%d] must be a topic name, got %s", i, tostring(t))
    end
  end
  if opts.group_id ~= nil and (type(opts.group_id) ~= "string" or opts.group_id == "") then
    util.build_error("kafka_source: group_id must be a non-empty string")
  end
  local start = opts.starting_offsets or "earliest"
  if type(start) == "table" then
    offsets_table("starting_offsets", start)
  elseif start ~= "earliest" and start ~= "latest" and start ~= "committed" then
    util.build_error("kafka_source: starting_offsets must be \"earliest\", \"latest\", "
      .. "\"committed\" or { [partition] = offset }, got %s", tostring(start))
  end
  if start == "committed" and not opts.group_id then
    util.build_error("kafka_source: starting_offsets = \"committed\" needs group_id")
  end
  local stop = opts.stopping_offsets
  if type(stop) == "table" then
    offsets_table("stopping_offsets", stop)
  elseif stop ~= nil and stop ~= "latest" then
    util.build_error("kafka_source: stopping_offsets must be nil (unbounded), \"latest\" or "
      .. "{ [partition] = offset }, got %s", tostring(stop))
  end
  if opts.watermarks ~= nil and not watermarks.is_strategy(opts.watermarks) then
    util.build_error("kafka_source: watermarks must be a strategy from weir.watermarks")
  end
  local props = {}
  for k, v in pairs(opts.properties or {}) do
    local tv = type(v)
    if type(k) ~= "string" or (tv ~= "string" and tv ~= "number" and tv ~= "boolean") then
      util.build_error("kafka_source: properties are librdkafka's, name = string, number or "
        .. "boolean; got %s = %s", tostring(k), tostring(v))
    end
    if k == "bootstrap.servers" or k == "group.id" or k == "enable.auto.commit" then
      util.build_error("kafka_source: properties: %s is %s", k, k == "enable.auto.commit"
        and "always false (offsets are committed when a checkpoint completes)"
        or "an option of its own (bootstrap_servers, group_id)")
    end
    props[#props + 1] = { k, tostring(v) }
  end
  table.sort(props, function(a, b) return a[1] < b[1] end)
  if opts.metadata ~= nil and type(opts.metadata) ~= "boolean" then
    util.build_error("kafka_source: metadata must be true or false")
  end
  fields.bootstrap_servers, fields.topics, fields.group_id = bs, topics, opts.group_id
  fields.starting_offsets, fields.stopping_offsets = start, stop
  fields.strategy, fields.properties, fields.metadata = opts.watermarks, props, opts.metadata
  fields.timeout = opts.timeout ~= nil and duration.parse_nonneg(opts.timeout,
    "kafka_source timeout", true) or 10000
  -- partition discovery (Flink's partition.discovery.interval.ms): every 5 minutes unless
  -- bounded, as Flink's KafkaSource
  local disc = opts.partition_discovery
  if disc ~= nil and disc ~= false then
    if stop ~= nil then
      util.build_error("kafka_source: partition_discovery needs an unbounded source (no "
        .. "stopping_offsets): a bounded source reads the partitions there are at its start")
    end
    disc = duration.parse_nonneg(disc, "kafka_source partition_discovery", true)
  elseif disc == nil then
    disc = stop == nil and 300000 or false
  end
  fields.partition_discovery = disc
  return fields
end

function M.describe(node)
  return ("kafka_source %s %s"):format(node.bootstrap_servers, table.concat(node.topics, ","))
end

-- The driver ----------------------------------------------------------------------------------

-- One generated driver per Kafka source: each message's value decoded (decode(e) -> true, v;
-- false for nothing; nil, why), its timestamp the Kafka one unless the strategy's assigner
-- says otherwise, and with watermarks its partition's generator told.
codegen.add_templates({ kafka = [[
local decode, emit, progress, meta, assign, gens, emitters, malformed, with_meta, bad_ts, MAX,
  cur, routes = ...
local type, abs, MIN = type, math.abs, -math.huge
return function(events, i, j)
  for k = i, j - 1 do
    progress[1] = k
    local e = events[k]
    local m = meta[e.index]
    local route = routes and routes[m.partition] -- a repartition topic's (weir.repartition)
    if route then
      route(e, m)
    else
      local ok, v = decode(e)
      if ok then
        local ts = m.timestamp
        if ts == MIN then ts = nil end
        if with_meta then v = with_meta(v, m) end
        if assign then
          ts = assign(v, ts)
          if type(ts) ~= "number" or not (abs(ts) <= MAX) or ts % 1 ~= 0 then bad_ts(ts) end
        end
        if cur then cur[0] = m.partition; cur[1] = m.offset end -- weir.copartition
        emit(0, v, ts)
        if cur then cur[0] = -1 end
        if gens then
          local p = m.partition
          gens[p]:on_event(v, ts or MIN, emitters[p])
        end
      elseif ok == nil then
        malformed(e, v)
      end
    end
  end
end]] })

local function bad_ts(t)
  error(("the timestamp assigner returned %s, %s"):format(duration.show(t),
    duration.time_problem(t, duration.MAX_TIME, "2^52")), 0)
end

---Where message e of a Kafka source is, for errors: "topic t partition 2 offset 17".
function M.where(node, e)
  local m = node.kafka_meta[e.index]
  local p = m.partition
  return ("topic %s partition %d offset %d"):format(node.kafka_parts[p + 1].topic,
    node.kafka_parts[p + 1].id, m.offset)
end

---The value decoder of a node: e -> true, value | nil, why.
local function decoder(node, typed)
  local is_null = function(e) return bit.band(e.flags, KAFKA_NULL) ~= 0 end
  if node.record then
    local ct, layout = node.record, typed.layout
    local new = ffi.new
    return function(e)
      if is_null(e) then return nil, "the message has no value (a tombstone)" end
      local r = new(ct)
      local rc = C.weir_fields_parse(layout, e.ptr, e.len, r)
      if rc == 0 then return true, r end
      return nil, rc
    end
  elseif node.format then
    local decode = node.format == "json" and json.decoder() or csv.decoder(node.separator, false)
    return function(e)
      if is_null(e) then return nil, "the message has no value (a tombstone)" end
      return decode(e.ptr, e.len)
    end
  end
  local str = ffi.string
  return function(e)
    if is_null(e) then return nil, "the message has no value (a tombstone)" end
    return true, str(e.ptr, e.len)
  end
end

local function with_meta(node)
  local str = ffi.string
  local parts = node.kafka_parts
  return function(v, m)
    local p = parts[m.partition + 1]
    return { value = v, key = m.key ~= nil and str(m.key, m.key_len) or nil, topic = p.topic,
             partition = p.id, offset = m.offset,
             timestamp = m.timestamp ~= -INF and m.timestamp or nil }
  end
end

---Per-partition event time (node.strategy): a generator and an emitter per partition, a valve
---over them whose output is the source's watermark and status.
local function partition_watermarks(job, node)
  local n = #node.kafka_parts
  local inst = node.instances[1]
  local valve = ffi.gc(C.weir_valve_new(n), C.weir_valve_free)
  node.kafka_valve = valve
  local function out(flags)
    if bit.band(flags, 1) ~= 0 then
      local w = C.weir_valve_output(valve)
      inst.watermark = w
      timeflow.forward_watermark(inst, w)
    end
    if bit.band(flags, 2) ~= 0 then
      timeflow.forward_status(inst, C.weir_valve_is_idle(valve) == 1)
    end
  end
  node.kafka_out = out
  local gens, emitters = {}, {}
  -- held by watermark alignment (weir.alignment): not quiet, and not idle
  local function genv_of(p)
    return {
      now = function() return job:now() end,
      arrival = function() return job.arrival end,
      quiet = function()
        return C.weir_source_pending(job.rt, node.src_id) == 0
          and not alignment.part_paused(node, p)
      end,
      paused = function() return alignment.part_paused(node, p) end,
    }
  end
  -- partition p's emitter: into its valve channel (a released partition's status stays)
  local function emitter_of(p)
    return watermarks.emitter(function(w)
      local f = C.weir_valve_watermark(valve, p, w)
      if f > 0 then out(f) end
    end, function(idle)
      if not node.kafka_parts[p + 1].released then
        local f = C.weir_valve_status(valve, p, idle and 1 or 0)
        if f > 0 then out(f) end
      end
    end)
  end
  for p = 0, n - 1 do
    local genv = genv_of(p)
    gens[p] = watermarks.generator(node.strategy, genv)
    emitters[p] = emitter_of(p)
  end
  node.kafka_gens, node.kafka_emitters = gens, emitters
  node.kafka_genv, node.kafka_emitter_of = genv_of, emitter_of -- group mode: a moved partition
  -- a partition discovered while the job runs (discovery below): its own generator, emitter
  -- and valve channel, starting at the bottom (it holds the watermark until it has data or
  -- goes idle, as a split Flink's reader adds)
  node.kafka_add_partition = function(p)
    n = n + 1
    gens[p] = watermarks.generator(node.strategy, genv_of(p))
    emitters[p] = emitter_of(p)
    local f = C.weir_valve_add_channel(valve)
    if f > 0 then out(f) end
  end
  -- a finished partition (its stop offset reached) is released: it no longer holds the
  -- watermark back (Flink: the split's output is released when the split finishes)
  local function release_done()
    for p = 0, n - 1 do
      local part = node.kafka_parts[p + 1]
      if not part.released and part.stop >= 0
          and C.weir_kafka_next_offset(job.rt, node.src_id, p) >= part.stop then
        part.released = true
        local f = C.weir_valve_status(valve, p, 1)
        if f > 0 then out(f) end
      end
    end
  end
  node.kafka_release = release_done
  local inner = job.sweep_tick
  local tick = function()
    inner()
    for p = 0, n - 1 do
      gens[p]:on_periodic_emit(emitters[p])
    end
    release_done()
  end
  jit.off(tick)
  job.sweep_tick = tick
  local interval = job.plan.env.auto_watermark_interval
  if interval > 0 then
    C.weir_rt_set_tick(job.rt, interval)
  end
end

---Partition discovery (node.partition_discovery ms): on the tick, every so often a request for
---the partitions not yet read (off the loop's thread), and those found adopted: a slot in
---kafka_parts and, with watermarks, a fresh generator and emitter and a valve channel at the
---bottom (node.kafka_add_partition), before any of their messages can arrive.
local function discovery(job, node)
  local every, last, rt, id = node.partition_discovery, -INF, job.rt, node.src_id
  local function fail()
    job_error(("%s: %s"):format(node.label, ffi.string(C.weir_rt_error(rt))))
  end
  local inner = job.sweep_tick
  local tick = function()
    inner()
    local now = job:now()
    if now - last >= every then
      last = now
      if C.weir_kafka_discover(rt, id) ~= 0 then fail() end
    end
    local n = C.weir_kafka_adopt(rt, id)
    if n < 0 then fail() end
    for i = #node.kafka_parts, n - 1 do
      local part = { topic = ffi.string(C.weir_kafka_topic(rt, id, i)),
                     id = C.weir_kafka_partition_id(rt, id, i),
                     start = C.weir_kafka_next_offset(rt, id, i), stop = -1, released = false }
      node.kafka_parts[i + 1] = part
      if node.kafka_add_partition then
        node.kafka_add_partition(i)
        alignment.add_partition(job, node, i)
      end
      C.weir_out_flush()
      io.stderr:write(("weir: %s: new partition %s/%d: read from offset %d\n"):format(
        node.label, part.topic, part.id, part.start))
    end
  end
  jit.off(tick)
  job.sweep_tick = tick
  local interval = job.plan.env.auto_watermark_interval
  C.weir_rt_set_tick(rt, interval > 0 and interval or math.min(every, 1000))
end

---The node's driver (node.lines, registered in job.drivers), once its partitions are known.
local function make_driver(job, node, helpers)
  local typed = {}
  if node.record then
    typed.layout = records.layout(node.record, node.separator, node.format, false)
  end
  local function malformed(e, why)
    if type(why) == "number" then
      return helpers.malformed_line(node, typed.layout, e, why)
    end
    return helpers.line_error(node, e, why)
  end
  if node.strategy then
    partition_watermarks(job, node)
  end
  node.lines = job:generate(node, "kafka", false, decoder(node, typed), node.emit, job.progress,
    node.kafka_meta, node.strategy and node.strategy.assigner or false,
    node.kafka_gens or false, node.kafka_emitters or false, malformed,
    node.metadata and with_meta(node) or false, bad_ts, duration.MAX_TIME,
    node.kafka_cur or false, node.kafka_routes or false)
  job.drivers[node.lines] = node
  if node.partition_discovery then
    discovery(job, node)
  end
end

---The source's consumer properties weir sets unless `properties` names them (docs/API.md,
---"Kafka source"). queued.min.messages: in librdkafka 2.0.2 the threshold applies to the whole
---consumer queue (each partition's fetch queue is forwarded to it, and rd_kafka_q_len reads
---the forwarded queue), not to each partition, and while the queue is above it the fetcher
---thread decides again only when something wakes it, at the latest after 1 s
---(rd_kafka_max_block_ms; fetch.queue.backoff.ms came in 2.2): a job that reads more than
---100,000 (the default) messages a second drains the queue before the fetcher looks again
---and sleeps the rest of that second. 1,000,000 holds a second of the source alone at ~1 M
---messages/s; librdkafka's memory for it is ~200 bytes a queued message.
M.CONSUMER_DEFAULTS = { { "queued.min.messages", "1000000" } }

---The source kind (weir.sources' KINDS.kafka); helpers: the source errors' wording from
---weir.sources (line_error(node, e, why), malformed_line(node, layout, e, code)).
function M.kind(helpers)
  local kind = { typed_driver = true, unit = "message" }
  function kind.open(job, node)
    local conf = { "bootstrap.servers", node.bootstrap_servers }
    if node.group_id then
      conf[#conf + 1] = "group.id"
      conf[#conf + 1] = node.group_id
    end
    local given = {}
    for _, kv in ipairs(node.properties) do
      conf[#conf + 1] = kv[1]
      conf[#conf + 1] = kv[2]
      given[kv[1]] = true
    end
    for _, kv in ipairs(M.CONSUMER_DEFAULTS) do
      if not given[kv[1]] then
        conf[#conf + 1] = kv[1]
        conf[#conf + 1] = kv[2]
      end
    end
    local conf_c = ffi.new("const char *[?]", #conf, conf)
    local group = job.plan.env.job.group
    -- with --group, the repartition topics too (one subscription: weir.repartition)
    local topics = group and require("weir.repartition").subscription(job, node) or node.topics
    local topics_c = ffi.new("const char *[?]", #topics, topics)
    node.kafka_keep = { conf, topics } -- the strings conf_c points into
    local id
    if group then
      id = M.open_member(job, node, conf_c, #conf, topics_c, #topics)
      if id < 0 then -- a missing repartition topic is named with its key_by
        require("weir.repartition").missing(job, ffi.string(C.weir_rt_error(job.rt)))
      end
    else
      id = C.weir_source_kafka(job.rt, M.describe(node), conf_c, #conf, topics_c,
        #node.topics, node.timeout)
    end
    if id < 0 then
      return id
    end
    node.src_id = id
    local n = C.weir_kafka_partitions(job.rt, id)
    local parts, box = {}, ffi.new("double[3]")
    local start, stop = node.starting_offsets, node.stopping_offsets
    for i = 0, n - 1 do
      if C.weir_kafka_offsets(job.rt, id, i, box) ~= 0 then
        job_error(("%s: %s"):format(node.label, ffi.string(C.weir_rt_error(job.rt))))
      end
      local pid = C.weir_kafka_partition_id(job.rt, id, i)
      local low, high, committed = box[0], box[1], box[2]
      local s
      if start == "earliest" then
        s = low
      elseif start == "latest" then
        s = high
      elseif start == "committed" then
        s = committed >= low and committed or low
      else
        s = start[pid] or low
      end
      local e = -1
      if stop == "latest" then
        e = high
      elseif type(stop) == "table" then
        e = stop[pid] or high
      end
      parts[i + 1] = { topic = ffi.string(C.weir_kafka_topic(job.rt, id, i)), id = pid,
                       start = s, stop = e, released = false, low = low }
      if C.weir_kafka_set_range(job.rt, id, i, s, e) ~= 0 then
        job_error(("%s: %s"):format(node.label, ffi.string(C.weir_rt_error(job.rt))))
      end
    end
    node.kafka_parts = parts
    node.kafka_meta = C.weir_kafka_meta(job.rt, id)
    if group then
      node.partition_discovery = false -- the group's subscription: a rebalance brings them
      node.kafka_routes = require("weir.repartition").setup(job, node)
    end
    make_driver(job, node, helpers)
    if group then
      M.join_group(job, node, group)
    end
    return id
  end
  -- the driver needs the partitions: open makes it (weir.sources makes the drivers first)
  function kind.driver()
    return function() error("internal: a Kafka source's driver before its open", 0) end
  end
  return kind
end

-- Group mode (weir run --group NAME: docs/API.md, Scale-out) ------------------------------------

---`--group` needs the job to read one Kafka source and nothing else: every process of the group
---runs the same job, and only a Kafka source's partitions are split among them.
function M.check_group(job)
  local o = job.plan.env.job
  local kafka_n, other = 0, nil
  for _, node in ipairs(job.plan.sources) do
    if node.source == "kafka" then
      kafka_n = kafka_n + 1
    else
      other = other or node
    end
  end
  if other or kafka_n ~= 1 then
    error({ usage = true, msg = ("--group %s: the job must read exactly one source, a "
      .. "kafka_source (the group splits its partitions among the processes); it has %s")
      :format(o.group,
      other and (other.label .. (kafka_n > 0 and " and others" or "")) or
      (kafka_n .. " kafka sources")) }, 0)
  end
  if o.checkpoint_dir or o.restore then
    error({ usage = true, msg = ("--group %s: --checkpoint-dir and --restore keep one "
      .. "process's state; a group's state moves with its partitions (docs/API.md, Scale-out)")
      :format(o.group) }, 0)
  end
end

---The source as a member of the job's group (C.weir_source_kafka_group): the source id.
function M.open_member(job, node, conf_c, nconf, topics_c, ntopics)
  local o = job.plan.env.job
  return C.weir_source_kafka_group(job.rt, M.describe(node), conf_c, nconf, topics_c,
    ntopics or #node.topics, node.timeout, o.group, o.instance_id)
end

local KIND_NAMES = { "assigned", "revoked", "lost" }

---Where partition slot s of a group member starts when it is assigned: the group's committed
---offset (what the last owner committed at its revoke, end or checkpoint), else as
---starting_offsets said at the start.
local function assigned_offset(job, node, s, box)
  local part = node.kafka_parts[s + 1]
  if C.weir_kafka_offsets(job.rt, node.src_id, s, box) ~= 0 then
    job_error(("%s: %s"):format(node.label, ffi.string(C.weir_rt_error(job.rt))))
  end
  local low, committed = box[0], box[2]
  if committed >= 0 then
    return math.max(committed, low)
  end
  return part.start
end

---A partition s the member now owns or gave up: its watermark channel. An assigned one gets a
---fresh generator and emitter and its channel becomes active with no watermark (it holds the
---source's watermark until it has one, as a discovered partition does); a revoked or lost one
---goes idle, so the partitions another process owns never hold this one's watermark back.
local function move_watermarks(node, s, assigned)
  if node.rep_of and node.rep_of[s] then -- a repartition partition (weir.repartition)
    if not assigned then
      require("weir.repartition").give_up_slot(node, s)
    end
    return
  end
  if not node.kafka_gens then
    return
  end
  local part = node.kafka_parts[s + 1]
  local f
  if assigned then
    node.kafka_gens[s] = watermarks.generator(node.strategy, node.kafka_genv(s))
    node.kafka_emitters[s] = node.kafka_emitter_of(s)
    part.released = false
    C.weir_valve_restore(node.kafka_valve, s, -INF, 0)
    f = C.weir_valve_status(node.kafka_valve, s, 0)
  else
    f = C.weir_valve_status(node.kafka_valve, s, 1)
  end
  if f > 0 then
    node.kafka_out(f)
  end
end

---Joins group `group` (the source is open, its driver made): every partition starts not owned
---(its watermark channel idle); after each batch (the consistent point: nothing in flight) the
---member's rebalance events are taken and finished, in order.
function M.join_group(job, node, group)
  local rt, id = job.rt, node.src_id
  local n = #node.kafka_parts
  if node.kafka_valve then
    for s = 0, n - 1 do
      local f = C.weir_valve_status(node.kafka_valve, s, 1)
      if f > 0 then node.kafka_out(f) end
    end
  end
  local kind, slots = ffi.new("int32_t[1]"), ffi.new("int32_t[?]", n + 1)
  local box = ffi.new("double[3]")
  local function fail()
    job_error(("%s: %s"):format(node.label, ffi.string(C.weir_rt_error(rt))))
  end
  local so = require("weir.scaleout").new(job, node, group)
  node.scaleout = so
  job.rebalance = function(final)
    if final then
      so:final() -- the job's end or stop: the owned partitions' last snapshots
      return
    end
    while true do
      local m = C.weir_kafka_rebalance_event(rt, id, kind, slots, n)
      if m < 0 then fail() end
      if m == 0 then break end
      local k = kind[0]
      local known = {}
      for i = 0, math.min(m, n) - 1 do
        if slots[i] >= 0 then
          known[#known + 1] = slots[i]
        end
      end
      local offs = ffi.new("double[?]", m)
      for i = 0, m - 1 do
        offs[i] = -1
      end
      if k == 1 then
        -- joined at once, paused, at the offsets known without a snapshot (absolute: no lookup
        -- that could race the finish's seek): the group does not wait for the restore
        -- (docs/ARCHITECTURE.md, Scale-out)
        local guess = {}
        for i = 0, m - 1 do
          if i < n and slots[i] >= 0 then
            guess[i] = assigned_offset(job, node, slots[i], box)
            offs[i] = guess[i]
          end
        end
        if C.weir_kafka_rebalance_accept(rt, id, offs) ~= 0 then fail() end
        for _, s in ipairs(known) do
          move_watermarks(node, s, true) -- fresh, unless the snapshot restores them
        end
        local from = so:assign(known)
        local j = 0
        for i = 0, m - 1 do
          if i < n and slots[i] >= 0 then
            j = j + 1
            offs[i] = from[j] >= 0 and from[j] or guess[i]
          end
        end
      else
        so:give_up(known, k == 2) -- a revoke hands off its snapshot; a loss writes nothing
      end
      local names = {}
      for i = 0, m - 1 do
        local s = i < n and slots[i] or -1
        if s >= 0 then
          local part = node.kafka_parts[s + 1]
          names[#names + 1] = ("%s/%d@%d"):format(part.topic, part.id,
            k == 1 and offs[i] or C.weir_kafka_next_offset(rt, id, s))
        end
      end
      if C.weir_kafka_rebalance_finish(rt, id, offs) ~= 0 then fail() end
      if k ~= 1 then
        for _, s in ipairs(known) do
          move_watermarks(node, s, false)
        end
      end
      C.weir_out_flush()
      io.stderr:write(("weir: %s: group %s: %s %s\n"):format(node.label, group,
        KIND_NAMES[k] or "?", #names > 0 and table.concat(names, " ") or "(none known)"))
    end
    if job.repartitions then -- control records (weir.repartition)
      require("weir.repartition").after_batch(job, node)
    end
    so:maybe_checkpoint()
  end
  jit.off(job.rebalance)
  -- the events are taken after a batch: a tick makes batches while no message comes
  local interval = job.plan.env.auto_watermark_interval
  C.weir_rt_set_tick(rt, interval > 0 and interval or 200)
end

-- Checkpoints ---------------------------------------------------------------------------------

---The source's part of a checkpoint (weir.checkpoint_parts): per partition its topic, id and
---next offset, and with watermarks its generator and emitter. A restore seeks every partition
---to its offset (a partition the checkpoint does not know starts at its first offset).
function M.checkpoint_part(ck, node, say)
  local job = ck.job
  return {
    what = node.label,
    snapshot = function()
      local parts = {}
      for i, p in ipairs(node.kafka_parts) do
        local s = { topic = p.topic, partition = p.id,
                    offset = C.weir_kafka_next_offset(job.rt, node.src_id, i - 1) }
        if node.kafka_gens then
          s.gen = watermarks.snapshot_generator(node.kafka_gens[i - 1])
          s.emitter = watermarks.snapshot_emitter(node.kafka_emitters[i - 1])
          s.released = p.released
        end
        parts[i] = s
      end
      -- what a completed checkpoint commits to the group: these offsets, not the ones the
      -- source reached by the time the checkpoint's writer process is done
      C.weir_kafka_mark(job.rt, node.src_id)
      return { kind = "kafka", topics = node.topics, partitions = parts }
    end,
    restore = function(v)
      if v.kind ~= "kafka" then
        job_error(("%s: the checkpoint's source is %s; a restore needs the same source")
          :format(node.label, tostring(v.kind)))
      end
      local old = {}
      for _, s in ipairs(v.partitions) do
        old[s.topic .. "\0" .. s.partition] = s
      end
      local moved, restored = {}, {}
      for i, p in ipairs(node.kafka_parts) do
        local s = old[p.topic .. "\0" .. p.id]
        if s then
          p.start = s.offset
          if C.weir_kafka_set_range(job.rt, node.src_id, i - 1, s.offset, p.stop) ~= 0 then
            job_error(("%s: %s"):format(node.label, ffi.string(C.weir_rt_error(job.rt))))
          end
          if s.gen and node.kafka_gens then
            local ok, err = pcall(watermarks.restore_generator, node.kafka_gens[i - 1], s.gen,
              ck.shift_ms or 0)
            if not ok then
              job_error(("%s: partition %d: %s"):format(node.label, p.id, tostring(err)))
            end
            watermarks.restore_emitter(node.kafka_emitters[i - 1], s.emitter)
            p.released = s.released or false
            restored[i] = true
          end
          moved[#moved + 1] = ("%s/%d@%d"):format(p.topic, p.id, s.offset)
        else
          -- new since the checkpoint: from its first offset, whatever starting_offsets says
          -- (Flink's KafkaSourceEnumerator: a partition found after the first discovery starts
          -- at EARLIEST), so that nothing it holds is skipped
          p.start = p.low or p.start
          if C.weir_kafka_set_range(job.rt, node.src_id, i - 1, p.start, p.stop) ~= 0 then
            job_error(("%s: %s"):format(node.label, ffi.string(C.weir_rt_error(job.rt))))
          end
          say("%s: %s partition %d is not in the checkpoint: it starts at its first offset, %d",
            node.label, p.topic, p.id, p.start)
        end
      end
      if node.kafka_valve then
        -- the output: the minimum over the restored channels (what they gave before)
        local lo, all_idle = INF, true
        for i, p in ipairs(node.kafka_parts) do
          local em = node.kafka_emitters[i - 1]
          if not (em.idle or p.released) then
            all_idle = false
            lo = math.min(lo, em.current)
          end
        end
        -- each restored partition's channel: its watermark, and its state bits (1 active, 2
        -- aligned: an active channel at or above the output counts for the minimum)
        for i, p in ipairs(node.kafka_parts) do
          if restored[i] then
            local em = node.kafka_emitters[i - 1]
            local active = not (em.idle or p.released)
            C.weir_valve_restore(node.kafka_valve, i - 1, em.current,
              active and (1 + ((all_idle or em.current >= lo) and 2 or 0)) or 0)
          end
        end
        C.weir_valve_restore(node.kafka_valve, -1, all_idle and -INF or lo, all_idle and 1 or 0)
      end
      ck.restored_sources[#ck.restored_sources + 1] = ("%s continues at %s"):format(node.label,
        table.concat(moved, " "))
    end,
  }
end

---A checkpoint completed: the offsets go to the group (for monitoring, as Flink commits them).
function M.committed(job, node, final)
  if node.group_id and C.weir_kafka_commit(job.rt, node.src_id, final and 1 or 0) ~= 0 then
    C.weir_out_flush()
    io.stderr:write(("weir: %s: %s\n"):format(node.label, ffi.string(C.weir_rt_error(job.rt))))
  end
end

-- The sink ---------------------------------------------------------------------------------

local SINK_OPTS = { bootstrap_servers = true, topic = true, key = true, partition = true,
  format = true, properties = true, flush_timeout = true }

---Checks ds:kafka_sink's options into the node's fields (user functions: key, partition).
function M.sink_opts(opts)
  if type(opts) ~= "table" then
    util.build_error("kafka_sink: expected a table of options { bootstrap_servers = ..., "
      .. "topic = ... }")
  end
  opts = util.check_opts("kafka_sink", opts, SINK_OPTS)
  if type(opts.bootstrap_servers) ~= "string" or opts.bootstrap_servers == "" then
    util.build_error("kafka_sink: bootstrap_servers must be a string such as \"127.0.0.1:9092\"")
  end
  if type(opts.topic) ~= "string" or opts.topic == "" then
    util.build_error("kafka_sink: topic must be a topic name")
  end
  for _, f in ipairs({ "key", "partition" }) do
    if opts[f] ~= nil and type(opts[f]) ~= "function" then
      util.build_error("kafka_sink: %s must be a function of the record", f)
    end
  end
  if opts.format ~= nil and opts.format ~= "text" and opts.format ~= "json" then
    util.build_error("kafka_sink: format must be \"text\" or \"json\"")
  end
  local props = {}
  for k, v in pairs(opts.properties or {}) do
    if type(k) ~= "string" or (type(v) ~= "string" and type(v) ~= "number"
        and type(v) ~= "boolean") then
      util.build_error("kafka_sink: properties are librdkafka's, name = string, number or "
        .. "boolean; got %s = %s", tostring(k), tostring(v))
    end
    if k == "bootstrap.servers" then
      util.build_error("kafka_sink: properties: bootstrap.servers is an option of its own")
    end
    props[#props + 1] = { k, tostring(v) }
  end
  table.sort(props, function(a, b) return a[1] < b[1] end)
  return { bootstrap_servers = opts.bootstrap_servers, topic = opts.topic, key_fn = opts.key,
    partition_fn = opts.partition, json = opts.format == "json", properties = props,
    flush_timeout = opts.flush_timeout ~= nil and duration.parse_nonneg(opts.flush_timeout,
      "kafka_sink flush_timeout", true) or 600000 }
end

function M.describe_sink(node)
  return ("kafka_sink %s %s"):format(node.bootstrap_servers, node.topic)
end

codegen.add_templates({ kafka_sink = [[
local C, sink, fmt, keyf, partf, out_n, failed, all, bad_key, bad_part = ...
local type, tostring = type, tostring
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  local s = v
  if all or type(v) ~= "string" then s = fmt(v) end
  local k, kn = nil, -1
  if keyf then
    k = keyf(v)
    local tk = type(k)
    if tk == "number" then k = tostring(k) elseif k ~= nil and tk ~= "string" then bad_key(k) end
    if k ~= nil then kn = #k end
  end
  local p = -1
  if partf then
    p = partf(v)
    if type(p) ~= "number" or p % 1 ~= 0 or p < 0 or p > 2147483647 then bad_part(p) end
  end
  if C.weir_kafka_sink_send(sink, k, kn, s, #s, p) ~= 0 then failed() end
end]] })

local function sink_failed(node)
  job_error(("%s: %s"):format(node.label, ffi.string(C.weir_kafka_sink_error(node.kafka_sink))))
end

---The sink's push (weir.run's instantiate_sink): one producer for all its subtasks.
function M.instantiate_sink(job, node)
  local conf = { "bootstrap.servers", node.bootstrap_servers }
  for _, kv in ipairs(node.properties) do
    conf[#conf + 1] = kv[1]
    conf[#conf + 1] = kv[2]
  end
  local err = ffi.new("char[512]")
  local sink = C.weir_kafka_sink_new(ffi.new("const char *[?]", #conf, conf), #conf, node.topic,
    err, 512)
  if sink == nil then
    job_error(("%s: %s"):format(node.label, ffi.string(err)))
  end
  node.kafka_sink = ffi.gc(sink, C.weir_kafka_sink_free)
  job.kafka_sinks = job.kafka_sinks or {}
  job.kafka_sinks[#job.kafka_sinks + 1] = node
  local format = require("weir.format")
  node.push = job:generate(node, "kafka_sink", false, C, node.kafka_sink,
    node.json and json.encode or format.value, node.key_fn or false, node.partition_fn or false,
    job.out_count, function() sink_failed(node) end, node.json,
    function(k) error(("the key function returned a %s, not a string or number"):format(
      type(k)), 0) end,
    function(p) error(("the partition function returned %s, not a partition number"):format(
      tostring(p)), 0) end)
end

---Waits until every message the sink sent is acknowledged (a checkpoint, the job's end): a
---failed delivery fails the job.
function M.flush_sink(node)
  if C.weir_kafka_sink_flush(node.kafka_sink, node.flush_timeout) ~= 0 then
    sink_failed(node)
  end
end

---The sink's part of a checkpoint: nothing to keep, but every message before it acknowledged
---(at-least-once, as Flink's KafkaSink with DeliveryGuarantee.AT_LEAST_ONCE).
function M.sink_part(_, node)
  return {
    what = node.label,
    snapshot = function()
      M.flush_sink(node)
      return { delivered = C.weir_kafka_sink_delivered(node.kafka_sink) }
    end,
    restore = function() end,
  }
end

---At the job's end (check) every sink flushes; at close (no check) the producers go.
function M.close_sinks(job, check)
  for _, node in ipairs(job.kafka_sinks or {}) do
    if node.kafka_sink ~= nil then
      if check then
        M.flush_sink(node)
      else
        C.weir_kafka_sink_free(ffi.gc(node.kafka_sink, nil))
        node.kafka_sink = nil
      end
    end
  end
end

jit.off(true) -- this chunk: set-up code
for _, f in pairs(M) do
  if type(f) == "function" then jit.off(f) end
end
jit.off(partition_watermarks)
jit.off(decoder)
jit.off(make_driver)
jit.off(discovery)

return M
