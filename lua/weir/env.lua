-- weir.env: the execution environment: options, sources, and env:execute().
-- Set-up code, run while the job is built (or once per job): never traced, so that a one-off
-- loop LuaJIT's shared hot counters make look hot cannot abort a trace (weir.codegen,
-- "Set-up code").
jit.off(true, true)
local util = require("weir.util")
local duration = require("weir.duration")
local stream = require("weir.stream")
local tag = require("weir.tag")
local records = require("weir.records")
local memory = require("weir.memory")
local C = require("weir.ffi")

local M = {}

local INT32_MAX = 2 ^ 31 - 1

local Env = {}
Env.__index = Env
Env.__tostring = function(self)
  return ("StreamExecutionEnvironment(parallelism %d, %d operators)"):format(self.parallelism,
    #self.nodes)
end
M.Env = Env

local OPTIONS = {
  parallelism = true, max_parallelism = true, auto_watermark_interval = true,
  on_error = true, end_of_input = true, name = true, batch_size = true, slicing = true,
  max_memory = true,
  -- internal, not in API.md (util.check_opts does not list it): _quiet_guard = false turns off
  -- with_idle_advance's guard against backpressure, so tests/cli/backpressure.sh can show it is
  -- the guard that keeps records from being late
  _quiet_guard = true,
}

---The job settings from the command line (weir run --parallelism/--replay, weir explain).
local function job_settings()
  local ok, job = pcall(require, "weir._job")
  if ok and type(job) == "table" then
    return job
  end
  return { mode = "run" }
end

---weir.env{...}: a new environment.
---@param opts table|nil
function M.new(opts)
  opts = util.check_opts("weir.env", opts, OPTIONS)
  local self = setmetatable({ nodes = {}, sources = {}, executed = false,
    unfinished_windows = {} }, Env)
  local job = job_settings()
  self.job = job
  self.parallelism = util.check_int("weir.env", "parallelism", opts.parallelism or 1, 1, 32768)
  if job.parallelism and job.parallelism > 0 then
    self.parallelism = job.parallelism
  end
  if opts.max_parallelism ~= nil then
    util.check_int("weir.env", "max_parallelism", opts.max_parallelism)
    if opts.max_parallelism > 32768 then
      util.build_error("weir.env: max_parallelism must be at most 32768")
    end
  end
  self.max_parallelism = opts.max_parallelism
  self.auto_watermark_interval = duration.parse_nonneg(
    opts.auto_watermark_interval == nil and 200 or opts.auto_watermark_interval,
    "auto_watermark_interval")
  if opts.on_error ~= nil and not tag.is_tag(opts.on_error) then
    util.build_error("weir.env: on_error must be an output tag from weir.output_tag(id)")
  end
  self.on_error = opts.on_error
  if opts.end_of_input ~= nil and opts.end_of_input ~= "weir" and opts.end_of_input ~= "flink" then
    util.build_error("weir.env: end_of_input must be \"weir\" or \"flink\", got %s",
      tostring(opts.end_of_input))
  end
  self.end_of_input = opts.end_of_input or "weir"
  if opts.slicing ~= nil and type(opts.slicing) ~= "boolean" then
    util.build_error("weir.env: slicing must be true or false, got %s", tostring(opts.slicing))
  end
  self.slicing = opts.slicing ~= false
  if opts._quiet_guard ~= nil and type(opts._quiet_guard) ~= "boolean" then
    util.build_error("weir.env: _quiet_guard must be true or false, got %s",
      tostring(opts._quiet_guard))
  end
  self.quiet_guard = opts._quiet_guard ~= false
  self.default_name = opts.name
  if opts.batch_size ~= nil then
    -- at most what one poll of the runtime delivers (WEIR_BATCH_MAX), as API.md says
    util.check_int("weir.env", "batch_size", opts.batch_size, 1, tonumber(C.WEIR_BATCH_MAX))
  end
  self.batch_size = opts.batch_size
  if opts.max_memory ~= nil then
    self.max_memory = memory.parse(opts.max_memory)
    if not self.max_memory then
      util.build_error("weir.env: max_memory must be a size: bytes, or text with k, m, g or t "
        .. "(e.g. \"512m\", \"2g\"), got %s", type(opts.max_memory) == "string"
        and ("%q"):format(opts.max_memory) or tostring(opts.max_memory))
    end
    self.max_memory_text = tostring(opts.max_memory)
  end
  return self
end

---Adds a node to the graph (called by weir.stream and the source methods).
function Env:add_node(kind, fields, inputs)
  if self.executed then
    util.build_error("%s: the job was already executed; build a new environment", kind)
  end
  local node = fields or {}
  node.kind = kind
  node.id = #self.nodes + 1
  node.inputs = inputs or {}
  node.callsite = util.callsite()
  node.env = self
  self.nodes[node.id] = node
  return node
end

local function source(self, kind, fields)
  local node = self:add_node("source", fields)
  node.source = kind
  node.parallelism = 1
  self.sources[#self.sources + 1] = node
  return stream.new(self, { { node = node } })
end

function Env:from_elements(...)
  local n = select("#", ...)
  local values = { ... }
  for i = 1, n do
    if values[i] == nil then
      util.build_error("from_elements: element %d is nil", i)
    end
  end
  return source(self, "elements", { values = values, count = n })
end

function Env:from_collection(t)
  if type(t) ~= "table" then
    util.build_error("from_collection: expected a sequence table, got %s", type(t))
  end
  local values, n = {}, #t
  for i = 1, n do
    values[i] = t[i]
    if values[i] == nil then
      util.build_error("from_collection: element %d is nil", i)
    end
  end
  return source(self, "elements", { values = values, count = n })
end

local TEXT_OPTS = { delimiter = true, max_line_bytes = true }

local function text_opts(call, opts, extra)
  local allowed = {}
  for k in pairs(TEXT_OPTS) do
    allowed[k] = true
  end
  for k in pairs(extra or {}) do
    allowed[k] = true
  end
  opts = util.check_opts(call, opts, allowed)
  if opts.delimiter ~= nil and (type(opts.delimiter) ~= "string" or opts.delimiter == "") then
    util.build_error("%s: delimiter must be a non-empty string", call)
  end
  if opts.max_line_bytes ~= nil then
    util.check_int(call, "max_line_bytes", opts.max_line_bytes, 1, INT32_MAX) -- int32_t in C
  end
  return opts
end

local RECORD_OPTS = { record = true, separator = true, format = true, header = true }
local FORMATS = { text = true, json = true, csv = true }

---The record options of a text source (API.md, Formats): `format` ("text" default, "json",
---"csv"), `record` (a weir.record_type; text needs it to be typed at all), `separator` (one
---byte, default ","; text with a record, and csv) and `header` (csv). Sets fields.record,
---fields.separator, fields.format (nil for plain text lines) and fields.header; returns fields.
local function record_opts(call, opts, fields)
  local fmt = opts.format
  if fmt ~= nil and not FORMATS[fmt] then
    util.build_error("%s: format must be \"text\", \"json\" or \"csv\", got %s", call,
      type(fmt) == "string" and ("%q"):format(fmt) or tostring(fmt))
  end
  fmt = fmt ~= "text" and fmt or nil
  if opts.header ~= nil and (fmt ~= "csv" or type(opts.header) ~= "boolean") then
    util.build_error("%s: header (true or false) is an option of format = \"csv\"", call)
  end
  if opts.record == nil and fmt == nil then
    if opts.separator ~= nil then
      util.build_error("%s: separator needs the record option", call)
    end
    return fields
  end
  if opts.record ~= nil and not records.info(opts.record) then
    util.build_error("%s: record must be a type from weir.record_type, got %s", call,
      tostring(opts.record))
  end
  if fmt == "json" and opts.separator ~= nil then
    util.build_error("%s: separator is not an option of format = \"json\"", call)
  end
  local sep = opts.separator or ","
  if type(sep) ~= "string" or #sep ~= 1 or (fmt == "csv" and sep == '"') then
    util.build_error("%s: separator must be a string of one byte%s, got %s", call,
      fmt == "csv" and " other than the quote" or "",
      type(sep) == "string" and ("%q"):format(sep) or tostring(sep))
  end
  fields.record, fields.separator, fields.format = opts.record, sep, fmt
  fields.header = opts.header == true
  return fields
end

function Env:read_text_file(path, opts)
  if type(path) ~= "string" or path == "" then
    util.build_error("read_text_file: expected a path")
  end
  opts = text_opts("read_text_file", opts, RECORD_OPTS)
  return source(self, "file", record_opts("read_text_file", opts, { path = path,
    delimiter = opts.delimiter, max_line_bytes = opts.max_line_bytes }))
end

function Env:stdin(opts)
  opts = text_opts("stdin", opts, RECORD_OPTS)
  return source(self, "stdin", record_opts("stdin", opts, { delimiter = opts.delimiter,
    max_line_bytes = opts.max_line_bytes }))
end

function Env:socket_text_stream(host, port, opts)
  if type(host) ~= "string" or host == "" then
    util.build_error("socket_text_stream: expected a host name")
  end
  if type(port) ~= "number" or port ~= math.floor(port) or port < 1 or port > 65535 then
    util.build_error("socket_text_stream: port must be an integer in 1..65535, got %s",
      tostring(port))
  end
  opts = text_opts("socket_text_stream", opts,
    { max_retry = true, record = true, separator = true, format = true, header = true })
  local retry = opts.max_retry or 0
  if type(retry) ~= "number" or retry ~= math.floor(retry) or retry < -1
      or retry > INT32_MAX then
    util.build_error("socket_text_stream: max_retry must be an integer from -1 to %d, got %s",
      INT32_MAX, tostring(retry))
  end
  return source(self, "socket", record_opts("socket_text_stream", opts, { host = host,
    port = port, delimiter = opts.delimiter, max_retry = retry,
    max_line_bytes = opts.max_line_bytes }))
end

---env:kafka_source{...} (docs/API.md, Kafka): the options are checked by weir.kafka.
function Env:kafka_source(opts)
  if type(opts) ~= "table" then
    util.build_error("kafka_source: expected a table of options { bootstrap_servers = ..., "
      .. "topics = ... }")
  end
  opts = util.check_opts("kafka_source", opts, require("weir.kafka").OPTS)
  if opts.header ~= nil then
    util.build_error("kafka_source: header is not an option (a message is one row)")
  end
  return source(self, "kafka", require("weir.kafka").build(opts,
    record_opts("kafka_source", opts, {})))
end

function Env:generate(fn, opts)
  local f = stream.user_fn("generate", fn, "generate")
  opts = util.check_opts("generate", opts, { count = true, rate = true })
  if opts.count ~= nil then
    util.check_int("generate", "count", opts.count, 0)
  end
  if opts.rate ~= nil and (type(opts.rate) ~= "number" or opts.rate <= 0) then
    util.build_error("generate: rate must be a positive number of records per second")
  end
  f.count = opts.count or -1
  f.rate = opts.rate or 0
  return source(self, "generate", f)
end

local NEXMARK_DEFAULTS = {
  count = -1, events_per_second = 10000, seed = 0, base_time = 0, hot_auction_ratio = 2,
  hot_bidder_ratio = 4, in_flight_auctions = 100, active_people = 1000,
}

---env:nexmark_bids{...}: Nexmark bids made in C as weir.nexmark.bid records
---(runtime/nexmark_gen.h); every option is optional (NEXMARK_DEFAULTS; no count = unbounded).
function Env:nexmark_bids(opts)
  opts = util.check_opts("nexmark_bids", opts, NEXMARK_DEFAULTS)
  local cfg = {}
  for k, default in pairs(NEXMARK_DEFAULTS) do
    local v = opts[k]
    if v == nil then
      v = default
    elseif k == "events_per_second" then
      if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge then
        util.build_error("nexmark_bids: events_per_second must be a positive number")
      end
    elseif k == "base_time" then
      v = duration.parse(v, "nexmark_bids base_time")
    elseif k == "seed" or k == "count" then
      util.check_int("nexmark_bids", k, v, 0)
      if v >= 2 ^ 53 then
        util.build_error("nexmark_bids: %s must be below 2^53", k)
      end
    else
      util.check_int("nexmark_bids", k, v, 1)
      if v > 2 ^ 31 - 1 then
        util.build_error("nexmark_bids: %s must fit 32 bits", k)
      end
    end
    cfg[k] = v
  end
  local count = cfg.count
  cfg.count = nil
  return source(self, "nexmark", { count = count, config = cfg, record = records.nexmark_bid })
end

---A source fed from Lua: the REPL's :push and :feed (and weir repl --manual), one string
---record at a time, at the clock reading when it is pushed.
function Env:manual(opts)
  opts = util.check_opts("manual", opts, RECORD_OPTS)
  return source(self, "manual", record_opts("manual", opts, {}))
end

function Env:replay(path, opts)
  if type(path) ~= "string" or path == "" then
    util.build_error("replay: expected a path")
  end
  opts = util.check_opts("replay", opts, RECORD_OPTS)
  return source(self, "replay", record_opts("replay", opts, { path = path }))
end

---What the window operators held when the job ended (see Job:metrics), or nil before; .memory
---(not listed by pairs) is the memory account then (weir.memory.figures).
---@return table|nil {[operator label] = {open_windows, elements, store_bytes, ...}}
function Env:metrics()
  return self.final_metrics
end

---The job's status table (see weir.status.collect): while it runs, from inside user code;
---after execute(), as it was when it ended.
---@return table|nil
function Env:status()
  local job = self.running_job -- set by weir.run while the job runs
  if job then
    return require("weir.status").collect(job)
  end
  local pending = self.final_pending
  self.final_pending = nil
  return require("weir.status").settle(self.final_status, pending)
end

---Runs the job (or, under `weir explain`, prints its graph). Returns when every source has
---ended, or after SIGINT/SIGTERM once what was in flight has drained.
---@param name string|nil
function Env:execute(name)
  if name ~= nil and type(name) ~= "string" then
    util.build_error("execute: the job name must be a string")
  end
  if self.executed then
    util.build_error("execute: this environment was already executed")
  end
  local first
  for w, at in pairs(self.unfinished_windows) do
    if not first or at < first[2] then
      first = { w, at }
    end
  end
  if first then
    -- Flink refuses a topology with a dangling WindowedStream too ("No operators defined")
    error(("%s: %s(...) has no window function: a windowed stream needs reduce, aggregate, "
      .. "process or apply (before env:execute())"):format(first[2], first[1].call), 0)
  end
  self.executed = true
  require("weir.param").check(self.job.mode) -- a --param the job never read
  self.job_name = name or self.default_name or "weir job"
  local plan = require("weir.plan").build(self)
  if self.job.mode == "timeline" then
    return require("weir.timeline").execute(plan) -- weir timeline: run and record
  end
  if self.job.mode == "repl" then
    -- the REPL runs it: :start, :stop, :advance, ...
    return require("weir.repl").submit(plan)
  end
  if self.job.mode == "explain" then
    io.stdout:write(require("weir.explain").text(plan))
    return
  end
  return require("weir.run").execute(plan)
end

stream.guard_env(Env)

return M
