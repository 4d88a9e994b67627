-- weir.stream: DataStream and KeyedStream, the job graph as users build it (API.md).
local util = require("weir.util")
local tag = require("weir.tag")

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
      key_fn = p.key_fn,
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

function Stream:key_by(fn)
  if type(fn) ~= "function" then
    util.build_error("key_by: expected a key selector function, got %s", type(fn))
  end
  local ports = {}
  for i, p in ipairs(self.ports) do
    ports[i] = { node = p.node, tag = p.tag, partition = "hash", key_fn = fn }
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
  util.check_int("set_parallelism", "parallelism", n)
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

function Stream:print(id)
  if id ~= nil and type(id) ~= "string" then
    util.build_error("print: the sink identifier must be a string")
  end
  return sink(self, "print", { print_id = id, fd = 1 })
end

function Stream:print_to_err(id)
  if id ~= nil and type(id) ~= "string" then
    util.build_error("print_to_err: the sink identifier must be a string")
  end
  return sink(self, "print", { print_id = id, fd = 2 })
end

function Stream:write_text(path, opts)
  if type(path) ~= "string" or path == "" then
    util.build_error("write_text: expected a path")
  end
  opts = util.check_opts("write_text", opts, { overwrite = true })
  return sink(self, "write_text", { path = path, overwrite = opts.overwrite and true or false })
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
  return { values = function() return values end }
end

function Sink:name(s)
  if type(s) ~= "string" or s == "" then
    util.build_error("name: expected a non-empty string")
  end
  self.node.name = s
  return self
end

function Sink:set_parallelism(n)
  util.check_int("set_parallelism", "parallelism", n)
  self.node.parallelism = n
  return self
end

-- Extension point: later modules (watermarks, windows) add methods to Stream and Keyed.
M.add = add
M.operator = operator
M.user_fn = user_fn

return M
