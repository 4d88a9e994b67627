-- weir.stream: DataStream and KeyedStream, the job graph as users build it (API.md).
-- Set-up code, run while the job is built (or once per job): never traced, so that a one-off
-- loop LuaJIT's shared hot counters make look hot cannot abort a trace (weir.codegen,
-- "Set-up code").
jit.off(true, true)
local util = require("weir.util")
local tag = require("weir.tag")
local duration = require("weir.duration")
local watermarks = require("weir.watermarks")
local windows = require("weir.windows")
local triggers = require("weir.triggers")
local evictors = require("weir.evictors")
local rolling = require("weir.rolling")

local M = {}

local Stream = {}
Stream.__index = Stream
M.Stream = Stream

local Keyed = setmetatable({}, { __index = Stream })
Keyed.__index = Keyed
M.Keyed = Keyed

local Sink = {}
Sink.__index = Sink
M.Sink = Sink

-- How streams show at the REPL prompt.
local function ports_text(self, what)
  local parts = {}
  for i, p in ipairs(self.ports) do
    parts[i] = (p.node.label or p.node.kind) .. (p.tag and (" side output '" .. p.tag.id .. "'")
      or "")
  end
  return ("%s(%s)"):format(what, table.concat(parts, ", "))
end
Stream.__tostring = function(self) return ports_text(self, "DataStream") end
Keyed.__tostring = function(self) return ports_text(self, "KeyedStream") end
Sink.__tostring = function(self) return "Sink(" .. (self.node.name or self.node.sink) .. ")" end

---A stream is a list of ports: {node, tag (side output) or nil, partition, key_fn}.
function M.new(env, ports)
  return setmetatable({ env = env, ports = ports }, Stream)
end

---Adds an operator node fed by this stream's ports and returns its main output stream.
local function add(self, kind, fields, partition_override)
  local inputs = {}
  for i, p in ipairs(self.ports) do
    inputs[i] = {
      node = p.node, tag = p.tag,
      partition = partition_override or p.partition,
      key_fn = p.key_fn, key_at = p.key_at, partitioned = p.partitioned,
    }
  end
  local node = self.env:add_node(kind, fields, inputs)
  return node
end

local function operator(self, kind, fields)
  local node = add(self, kind, fields)
  return M.new(self.env, { { node = node } })
end

local function user_fn(call, fn, method, alias)
  local how = util.check_fn(call, fn, method, alias)
  return { fn = fn, rich = how == "rich", method = method, alias = alias,
           defined = util.defined_at(fn) }
end

---The single operator node behind a stream, for calls that configure an operator.
local function own_node(self, call)
  local p = self.ports[1]
  if #self.ports ~= 1 or p.tag or p.partition then
    util.build_error("%s: applies to an operator's output, not to a union, a side output or "
      .. "a repartitioned stream", call)
  end
  return p.node
end

function Stream:map(fn)
  return operator(self, "map", user_fn("map", fn, "map"))
end

function Stream:flat_map(fn)
  return operator(self, "flat_map", user_fn("flat_map", fn, "flat_map"))
end

function Stream:filter(fn)
  return operator(self, "filter", user_fn("filter", fn, "filter"))
end

function Stream:process(fn)
  return operator(self, "process", user_fn("process", fn, "process"))
end

function Stream:key_by(fn, opts)
  if type(fn) ~= "function" then
    util.build_error("key_by: expected a key selector function, got %s", type(fn))
  end
  local partitioned = require("weir.copartition").options(opts) -- { partitioned = true }
  local ports, at = {}, util.callsite()
  for i, p in ipairs(self.ports) do
    ports[i] = { node = p.node, tag = p.tag, partition = "hash", key_fn = fn, key_at = at,
                 partitioned = partitioned }
  end
  local k = setmetatable({ env = self.env, ports = ports, key_fn = fn }, Keyed)
  return k
end

function Stream:rebalance()
  local ports = {}
  for i, p in ipairs(self.ports) do
    ports[i] = { node = p.node, tag = p.tag, partition = "rebalance" }
  end
  return M.new(self.env, ports)
end

function Stream:union(...)
  local ports = {}
  for _, p in ipairs(self.ports) do
    ports[#ports + 1] = p
  end
  for i = 1, select("#", ...) do
    local other = select(i, ...)
    if getmetatable(other) ~= Stream and getmetatable(other) ~= Keyed then
      util.build_error("union: argument %d is not a stream", i)
    end
    if other.env ~= self.env then
      util.build_error("union: argument %d belongs to another environment", i)
    end
    for _, p in ipairs(other.ports) do
      ports[#ports + 1] = p
    end
  end
  return M.new(self.env, ports)
end

function Stream:set_parallelism(n)
  util.check_int("set_parallelism", "parallelism", n, 1, 32768)
  local node = own_node(self, "set_parallelism")
  if node.kind == "source" and n ~= 1 then
    util.build_error("set_parallelism: sources have parallelism 1")
  end
  node.parallelism = n
  return self
end

function Stream:name(s)
  if type(s) ~= "string" or s == "" then
    util.build_error("name: expected a non-empty string")
  end
  own_node(self, "name").name = s
  return self
end

---Names the operator's state in checkpoints (docs/API.md, Checkpoints): a restore finds an
---operator's state by its uid, so set one on every stateful operator of a job you change.
function Stream:uid(s)
  if type(s) ~= "string" or s == "" or s:find("[%c/]") then
    util.build_error("uid: expected a non-empty string without / or control characters")
  end
  own_node(self, "uid").uid = s
  return self
end

function Stream:get_side_output(t)
  if not tag.is_tag(t) then
    util.build_error("get_side_output: expected an output tag from weir.output_tag(id)")
  end
  local node = own_node(self, "get_side_output")
  return M.new(self.env, { { node = node, tag = t } })
end

-- Sinks ------------------------------------------------------------------------------------

local function sink(self, kind, fields)
  local node = add(self, "sink", fields)
  node.sink = kind
  return setmetatable({ env = self.env, node = node }, Sink)
end

local SINK_FORMATS = { text = false, json = true }

---The options of a print sink: its identifier (a string), or { id = ..., format = ... }.
local function print_opts(call, opts, fd)
  local fields = { fd = fd }
  if type(opts) == "table" then
    opts = util.check_opts(call, opts, { id = true, format = true })
    fields.print_id = opts.id
    if opts.format ~= nil and SINK_FORMATS[opts.format] == nil then
      util.build_error("%s: format must be \"text\" or \"json\"", call)
    end
    fields.json = SINK_FORMATS[opts.format] or false
  else
    fields.print_id = opts
  end
  if fields.print_id ~= nil and type(fields.print_id) ~= "string" then
    util.build_error("%s: the sink identifier must be a string", call)
  end
  return fields
end

function Stream:print(opts)
  return sink(self, "print", print_opts("print", opts, 1))
end

function Stream:print_to_err(opts)
  return sink(self, "print", print_opts("print_to_err", opts, 2))
end

function Stream:write_text(path, opts)
  if type(path) ~= "string" or path == "" then
    util.build_error("write_text: expected a path")
  end
  opts = util.check_opts("write_text", opts, { overwrite = true, format = true })
  if opts.format ~= nil and SINK_FORMATS[opts.format] == nil then
    util.build_error("write_text: format must be \"text\" or \"json\"")
  end
  return sink(self, "write_text", { path = path, overwrite = opts.overwrite and true or false,
    json = SINK_FORMATS[opts.format] or false })
end

---ds:kafka_sink{...} (docs/API.md, Kafka): the options are checked by weir.kafka.
function Stream:kafka_sink(opts)
  return sink(self, "kafka", require("weir.kafka").sink_opts(opts))
end

function Stream:sink(fn)
  local f = user_fn("sink", fn, "sink", "invoke")
  return sink(self, "fn", f)
end

---A sink (parallelism 1) that keeps what arrives; handle:values() returns it, in order.
function Stream:collect()
  local values = {}
  local s = sink(self, "collect", { values = values })
  s.node.parallelism = 1
  local handle = { values = function() return values end }
  function handle.uid(h, name) -- names its values in checkpoints, as Sink:uid
    s:uid(name)
    return h
  end
  return handle
end

function Sink:uid(s)
  if type(s) ~= "string" or s == "" or s:find("[%c/]") then
    util.build_error("uid: expected a non-empty string without / or control characters")
  end
  self.node.uid = s
  return self
end

function Sink:name(s)
  if type(s) ~= "string" or s == "" then
    util.build_error("name: expected a non-empty string")
  end
  self.node.name = s
  return self
end

function Sink:set_parallelism(n)
  util.check_int("set_parallelism", "parallelism", n, 1, 32768)
  self.node.parallelism = n
  return self
end

-- Event time and windows ----------------------------------------------------------------------

function Stream:assign_timestamps_and_watermarks(strategy)
  if not watermarks.is_strategy(strategy) then
    util.build_error("assign_timestamps_and_watermarks: expected a strategy from weir.watermarks")
  end
  return operator(self, "timestamps", { strategy = strategy })
end

local Windowed = {}
Windowed.__index = Windowed
Windowed.__tostring = function(self)
  return ("WindowedStream(%s)"):format(self.assigner.name)
end
M.Windowed = Windowed

local function windowed(self, assigner, keyed, call)
  if not windows.is_assigner(assigner) then
    util.build_error("%s: expected a window assigner from weir.windows", call)
  end
  local w = setmetatable({ stream = self, assigner = assigner, keyed = keyed, lateness = 0,
                        call = call }, Windowed)
  -- a windowed stream given no window function is a build error at execute (env.lua)
  self.env.unfinished_windows[w] = util.callsite()
  return w
end

function Keyed:window(assigner)
  return windowed(self, assigner, true, "window")
end

function Stream:window_all(assigner)
  return windowed(self, assigner, false, "window_all")
end

local function count_window(self, keyed, size, slide)
  local call = keyed and "count_window" or "count_window_all"
  util.check_int(call, "size", size)
  local w = windowed(self, windows.global(), keyed, call)
  if slide == nil then
    w.trigger_ = triggers.purging(triggers.count(size))
  else
    util.check_int(call, "slide", slide)
    w.evictor_ = evictors.count(size)
    w.trigger_ = triggers.count(slide)
  end
  return w
end

function Keyed:count_window(size, slide)
  return count_window(self, true, size, slide)
end

function Stream:count_window_all(size, slide)
  return count_window(self, false, size, slide)
end

function Windowed:trigger(t)
  if not triggers.is_trigger(t) then
    util.build_error("trigger: expected a trigger from weir.triggers or weir.trigger{...}")
  end
  self.trigger_ = t
  return self
end

function Windowed:evictor(e)
  if not evictors.is_evictor(e) then
    util.build_error("evictor: expected an evictor from weir.evictors or weir.evictor{...}")
  end
  self.evictor_ = e
  return self
end

function Windowed:allowed_lateness(d)
  self.lateness = duration.parse_nonneg(d, "allowed_lateness")
  return self
end

function Windowed:side_output_late_data(t)
  if not tag.is_tag(t) then
    util.build_error("side_output_late_data: expected an output tag from weir.output_tag(id)")
  end
  self.late_tag = t
  return self
end

local function window_node(self, fn_kind, wfn, fields)
  self.stream.env.unfinished_windows[self] = nil
  local trigger = self.trigger_ or triggers[self.assigner.default_trigger]()
  if self.assigner.merging then
    if not trigger.on_merge then
      util.build_error("%s: trigger %s cannot merge, so it cannot be used with %s windows "
        .. "(a trigger needs on_merge)", self.call, trigger.name, self.assigner.name)
    end
    if fn_kind == "aggregate" and not wfn.merge then
      util.build_error("aggregate: session windows merge accumulators, so the aggregate needs "
        .. "a merge(a, b) function")
    end
  end
  fields.assigner, fields.trigger, fields.evictor = self.assigner, trigger, self.evictor_
  fields.lateness, fields.late_tag, fields.keyed = self.lateness, self.late_tag, self.keyed
  fields.fn_kind, fields.user_fn = fn_kind, wfn
  fields.window_call = self.call
  local stream = self.stream
  local node = add(stream, "window", fields)
  if not self.keyed then
    node.parallelism = 1 -- window_all runs as one subtask, as in Flink
  end
  return M.new(stream.env, { { node = node } })
end

local function optional_process_fn(call, pfn)
  if pfn == nil then
    return {}
  end
  local f = user_fn(call, pfn, "process")
  f.process_fn = pfn
  return f
end

function Windowed:reduce(fn, process_fn)
  if type(fn) ~= "function" then
    util.build_error("reduce: expected a function fn(a, b) -> c (reduce functions cannot be rich)")
  end
  local fields = optional_process_fn("reduce", process_fn)
  return window_node(self, "reduce", fn, fields)
end

function Windowed:aggregate(agg, process_fn)
  if type(agg) ~= "table" then
    util.build_error("aggregate: expected a table {create, add, result[, merge]}")
  end
  for _, m in ipairs({ "create", "add", "result" }) do
    if type(agg[m]) ~= "function" then
      util.build_error("aggregate: '%s' must be a function", m)
    end
  end
  if agg.merge ~= nil and type(agg.merge) ~= "function" then
    util.build_error("aggregate: 'merge' must be a function")
  end
  local builtin_out = agg.builtin ~= nil and process_fn == nil
  if builtin_out then
    -- weir.aggregates without a window function: the window's record (key, start, stop,
    -- value), which the fast operator makes without calling this (weir.aggwindow)
    process_fn = require("weir.aggregates").emit_result
  end
  local fields = optional_process_fn("aggregate", process_fn)
  fields.builtin_out = builtin_out
  return window_node(self, "aggregate", agg, fields)
end

function Windowed:process(fn)
  local f = user_fn("process", fn, "process")
  return window_node(self, "process", fn, f)
end

function Windowed:apply(fn)
  local f = user_fn("apply", fn, "apply")
  return window_node(self, "apply", fn, f)
end

-- Keyed operators (weir.keyed) ------------------------------------------------------------

---keyed:process: a KeyedProcessFunction, with keyed state (open's rt) and timers.
function Keyed:process(fn)
  local f = user_fn("process", fn, "process")
  if f.rich then
    for _, m in ipairs({ "on_timer", "open", "close" }) do
      if fn[m] ~= nil and type(fn[m]) ~= "function" then
        util.build_error("process: '%s' must be a function", m)
      end
    end
  end
  return operator(self, "keyed_process", f)
end

rolling.install(Keyed, function(self, fields)
  return operator(self, "rolling", fields)
end, user_fn)

-- Build mistakes ------------------------------------------------------------------------------
-- A misspelt or misplaced method is a build error naming the user's line, what the object is,
-- and the likely fix (weir.mistakes, loaded only then). The method tables stay plain tables
-- (pairs lists the methods); the guard is their metatable, so it runs only for a name that is
-- no method, never on the way of records, and it keeps the live heap small (a larger heap
-- costs every garbage collection of a running job).

-- what: the object's name in messages; tables: where its methods are; fields: its own fields
-- (read as nil when unset).
local function guard(methods, what, tables, fields)
  setmetatable(methods, { __index = function(_, k)
    for i = 2, #tables do
      local v = rawget(tables[i], k)
      if v ~= nil then
        return v
      end
    end
    if type(k) ~= "string" or fields[k] or k:sub(1, 1) == "_" then
      return nil
    end
    require("weir.mistakes").no_method(what, k, tables)
  end })
end

guard(Stream, "DataStream", { Stream }, { env = true, ports = true })
guard(Keyed, "KeyedStream", { Keyed, Stream }, { env = true, ports = true, key_fn = true })
guard(Windowed, "WindowedStream", { Windowed }, { stream = true, assigner = true,
  keyed = true, lateness = true, call = true, trigger_ = true, evictor_ = true,
  late_tag = true })
guard(Sink, "Sink", { Sink }, { env = true, node = true })

---The environment's guard (env.lua): its instances carry many optional fields, read as nil
---all over weir, so only a name within two edits of a method of its own, or a stream method,
---is a mistake (weir.mistakes decides, once per name).
function M.guard_env(Env)
  -- the environment's optional fields (env.lua), and every name found since to be no mistake
  local fine = { batch_size = true, default_name = true, max_memory = true,
    max_memory_text = true, max_parallelism = true, on_error = true, final_metrics = true,
    final_status = true, final_pending = true, running_job = true, job_name = true }
  setmetatable(Env, { __index = function(_, k)
    if fine[k] or type(k) ~= "string" or k:sub(1, 1) == "_" then
      return nil
    end
    require("weir.mistakes").env_name(Env, k) -- raises for a mistake
    fine[k] = true
    return nil
  end })
  jit.on(getmetatable(Env).__index) -- read by running operators (an absent field): traced
end

-- Extension point: later modules (watermarks, windows) add methods to Stream and Keyed.
M.add = add
M.operator = operator
M.user_fn = user_fn
M.guard = guard
M.windowed = windowed

-- two-input operators: connect (weir.connect), the window and interval joins (weir.join)
require("weir.connect").install(M)
require("weir.join").install(M)

-- a keyed stream's table lists every method it has (pairs(getmetatable(keyed).__index), as
-- the REPL's completion reads it); methods added to Stream later are found by its guard
for name, f in pairs(Stream) do
  if type(f) == "function" and name:sub(1, 2) ~= "__" and rawget(Keyed, name) == nil then
    Keyed[name] = f
  end
end

return M
