-- weir.connect: two-input operators (Flink's ConnectedStreams). a:connect(b) gives a
-- ConnectedStreams; co_map and co_flat_map run on any two streams (Flink's CoStreamMap,
-- CoStreamFlatMap), co_process on two keyed ones (KeyedCoProcessOperator: keyed state and
-- timers shared by both inputs, one per key). Owns the builder (installed into weir.stream) and
-- the instantiation of its nodes: each input port of a two-input node gets the push of its side
-- (port.push, which weir.exchange sends to), and the node's one valve has the channels of both
-- inputs, so its watermark is the minimum over them with idleness as for any operator. A
-- co_process node is a keyed operator (weir.keyed: node.states, node.state_list, the timer
-- service, the operator interface), so what covers keyed state covers it.
local C = require("weir.ffi")
local util = require("weir.util")
local codegen = require("weir.codegen")

local M = {}

local Connected = {}
Connected.__index = Connected
M.Connected = Connected
Connected.__tostring = function(self)
  return ("ConnectedStreams(%s, %s)"):format(tostring(self.first), tostring(self.second))
end

---The input ports of a two-input node: a's ports (side 1), then b's (side 2). Each keeps its
---partitioning and key selector (a keyed side is hash-partitioned by its own key).
function M.ports(a, b)
  local ports, sides = {}, {}
  for _, p in ipairs(a.ports) do
    ports[#ports + 1], sides[#sides + 1] = p, 1
  end
  for _, p in ipairs(b.ports) do
    ports[#ports + 1], sides[#sides + 1] = p, 2
  end
  return ports, sides
end

---Adds a two-input node fed by a (side 1) and b (side 2): its inputs carry side = 1 or 2.
function M.add_node(stream, a, b, kind, fields)
  local ports, sides = M.ports(a, b)
  local node = stream.add({ env = a.env, ports = ports }, kind, fields)
  for i, input in ipairs(node.inputs) do
    input.side = sides[i]
  end
  return node
end

function M.check_other(call, self, other, Stream, Keyed)
  local mt = getmetatable(other)
  if mt ~= Stream and mt ~= Keyed then
    util.build_error("%s: expected a stream, got %s", call, type(other))
  end
  if other.env ~= self.env then
    util.build_error("%s: the other stream belongs to another environment", call)
  end
end

---A table of user methods: checks each name is a function (required ones present).
local function methods(call, fns, required, optional)
  if type(fns) ~= "table" then
    util.build_error("%s: expected a table { %s }, got %s", call,
      table.concat(required, ", "), type(fns))
  end
  for _, m in ipairs(required) do
    if type(fns[m]) ~= "function" then
      util.build_error("%s: '%s' must be a function%s", call, m,
        fns[m] == nil and (" (the table has no '" .. m .. "')") or "")
    end
  end
  for _, m in ipairs(optional or {}) do
    if fns[m] ~= nil and type(fns[m]) ~= "function" then
      util.build_error("%s: '%s' must be a function", call, m)
    end
  end
end

function M.install(stream)
  local Stream, Keyed = stream.Stream, stream.Keyed

  function Stream:connect(other)
    M.check_other("connect", self, other, Stream, Keyed)
    return setmetatable({ env = self.env, first = self, second = other,
                          keyed = getmetatable(self) == Keyed and getmetatable(other) == Keyed },
      Connected)
  end

  local function two_input(self, kind, call, fns, required)
    methods(call, fns, required, { "open", "close" })
    local node = M.add_node(stream, self.first, self.second, kind,
      { fn = fns, rich = true, method = required[1], defined = util.defined_at(fns) })
    return stream.new(self.env, { { node = node } })
  end

  function Connected:co_map(fns)
    return two_input(self, "co_map", "co_map", fns, { "map1", "map2" })
  end

  function Connected:co_flat_map(fns)
    return two_input(self, "co_flat_map", "co_flat_map", fns, { "flat_map1", "flat_map2" })
  end

  function Connected:co_process(fns)
    if not self.keyed then
      util.build_error("co_process: both inputs must be keyed streams (a:key_by(f):connect("
        .. "b:key_by(g)):co_process{...}): keyed state and timers are per key")
    end
    methods("co_process", fns, { "process1", "process2" }, { "on_timer" })
    local node = M.add_node(stream, self.first, self.second, "co_process",
      { fn = fns, rich = true, method = "process1", defined = util.defined_at(fns) })
    return stream.new(self.env, { { node = node } })
  end

  stream.guard(Connected, "ConnectedStreams", { Connected },
    { env = true, first = true, second = true, keyed = true })
end

-- Instantiation (weir.run) -------------------------------------------------------------------

---Gives each input port of node the push of its side and registers both with the job (the
---error handler finds the operator and record from either).
function M.wire_sides(job, node, push1, push2)
  for _, input in ipairs(node.inputs) do
    input.push = input.side == 2 and push2 or push1
  end
  node.push = push1
  job.pushes[push2] = node
end

---co_map and co_flat_map: the map and flat_map templates over each side's method (rich: the
---subtask's copy of the table is self). Each side has a prototype of its own ("map/2"): with
---one shared, a trace of it specialised on one side's function, and the other side's calls
---left it at its first guard for side traces that ran on into their source's loop before
---it was compiled ("loop unroll limit reached", then a fallback to the interpreter).
function M.instantiate(job, node)
  local fn, objs, emit = node.fn, node.objs, node.emit
  local push1, push2
  if node.kind == "co_map" then
    push1 = job:generate(node, "map", true, fn.map1, objs, emit,
      codegen.nil_result("co_map map1"), util.is_nil)
    push2 = job:generate(node, "map/2", true, fn.map2, objs, emit,
      codegen.nil_result("co_map map2"), util.is_nil)
  else
    push1 = job:generate(node, "flat_map", true, fn.flat_map1, objs, emit, util.is_nil)
    push2 = job:generate(node, "flat_map/2", true, fn.flat_map2, objs, emit, util.is_nil)
  end
  M.wire_sides(job, node, push1, push2)
end

---co_process: a keyed operator (weir.keyed) whose first input runs process1 and second
---process2, over the same keyed state, timers and on_timer.
function M.instantiate_co_process(job, node, keyed)
  local intern, insts = keyed.instantiate(job, node, node.fn.process1)
  local push2 = job:generate(node, "keyed_process/2", true, node.fn.process2, node.objs, insts,
    intern, C, node.emit, util.is_nil)
  M.wire_sides(job, node, node.push, push2)
end

return M
