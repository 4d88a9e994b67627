-- weir.run: runs a planned job. Every operator subtask gets a push function generated for its
-- operator (one prototype per operator, so each gets its own JIT traces); records flow as
-- direct calls from the source driver through the chain, in one deterministic order. The
-- driver pulls batches from C (weir_loop_poll), one xpcall per batch in a worker coroutine (see
-- Failures), and resumes past a failed record when the job routes errors to a side output.
local ffi = require("ffi")
local bit = require("bit")
local C = require("weir.ffi")
local format = require("weir.format")
local keys = require("weir.keys")
local replay = require("weir.replay")
local util = require("weir.util")
local records = require("weir.records")
local watermarks = require("weir.watermarks")
local windowing = require("weir.windowing")
local windows = require("weir.windows")
local status = require("weir.status")
local duration = require("weir.duration")
local memory = require("weir.memory")

local M = {}

local event_array_t = ffi.typeof("weir_event_t[?]")
local BATCH = tonumber(C.WEIR_BATCH_MAX)
local EV_LINE, EV_RANGE, EV_END = tonumber(C.WEIR_EV_LINE), tonumber(C.WEIR_EV_RANGE),
  tonumber(C.WEIR_EV_END)
local EV_TICK, EV_TIMER, EV_STOP = tonumber(C.WEIR_EV_TICK), tonumber(C.WEIR_EV_TIMER),
  tonumber(C.WEIR_EV_STOP)
local EV_STATUS = tonumber(C.WEIR_EV_STATUS)
local EV_RECORDS = tonumber(C.WEIR_EV_RECORDS)
local END_EXHAUSTED = tonumber(C.WEIR_END_EXHAUSTED)
local INF = math.huge
local RECORD_CUT = 200
local RESERVE_BYTES = 65536

-- Errors ------------------------------------------------------------------------------------

---A failure that ends the job: main.lua prints "weir: " .. text and exits 1.
local function job_error(text)
  error({ weir_job_error = true, text = text }, 0)
end
M.job_error = job_error

---What a failed write to stdout or stderr (weir_out_write's code) means, for the message.
local function out_error_text(fd, code)
  local name = fd == 2 and "standard error" or "standard output"
  local why = ffi.string(C.weir_strerror(code))
  if why == "broken pipe" then
    return name .. " closed (broken pipe)"
  elseif why == "bad file descriptor" then
    return name .. " is closed (bad file descriptor)"
  end
  return ("cannot write to %s: %s"):format(name, why)
end

local function record_text(v)
  return format.brief(v, RECORD_CUT)
end

---The text of an error value, whatever it is: error(nil), error({}), an error object whose
---__tostring fails. Never raises (it runs on the error path).
local function message_text(msg)
  local t = type(msg)
  if t == "string" then
    return msg
  elseif t == "nil" then
    return "nil (error() was called without a message)"
  elseif t == "table" then
    local mt = getmetatable(msg)
    if type(mt) == "table" and mt.__tostring ~= nil then
      local ok, s = pcall(tostring, msg)
      if ok and type(s) == "string" then
        return s
      end
      return "an error object whose __tostring fails"
    end
    return "error object " .. record_text(msg)
  end
  return record_text(msg)
end

---The user-facing part of a traceback: frames in the user's files, not weir's or C's.
local function user_traceback(tb)
  if type(tb) ~= "string" then
    return ""
  end
  local out = {}
  local frames = tb:match("\nstack traceback:\n(.*)$") or ""
  for line in frames:gmatch("[^\n]+") do
    local t = line:match("^%s*(.-)%s*$")
    if not (t:find("^%[C%]") or t:find("^weir/") or t:find("^%[weir") or t:find("^weir op ")
        or t:find("^%(tail call%)") or t:find("^%.%.%.$")) then
      out[#out + 1] = "    " .. t
    end
  end
  if #out == 0 then
    return ""
  end
  return "  stack traceback:\n" .. table.concat(out, "\n")
end

-- Code generation ---------------------------------------------------------------------------
-- Every operator has ONE generated push function, push(st, v, ts, key), shared by its
-- subtasks: st is the subtask index and per-subtask state lives in 0-based arrays. Calls
-- between operators are therefore monomorphic (an exchange computes st and calls the same
-- function), which keeps the whole chain in one JIT trace.

local TEMPLATES = {
  map = [[
local f, objs, emit, fail_nil, is_nil = ...
return function(st, v, ts, key)
  local r = CALL(v)
  if is_nil(r) then fail_nil() end -- not a tail call: the handler needs this frame
  return emit(st, r, ts)
end]],
  filter = [[
local f, objs, emit = ...
return function(st, v, ts, key)
  if CALL(v) then return emit(st, v, ts) end
end]],
  flat_map = [[
local f, objs, emit, is_nil = ...
local cur_st, cur_ts = 0, nil
local function out(x)
  if is_nil(x) then error("out(nil): records cannot be nil", 2) end
  emit(cur_st, x, cur_ts)
  OP_[0] = OPID_ -- the user function runs on
end
return function(st, v, ts, key)
  cur_st, cur_ts = st, ts
  CALL(v, out)
end]],
  process = [[
local f, objs, emit, ctxs, is_nil = ...
local cur_st, cur_ts = 0, nil
local function out(x)
  if is_nil(x) then error("out(nil): records cannot be nil", 2) end
  emit(cur_st, x, cur_ts)
  OP_[0] = OPID_ -- the user function runs on
end
return function(st, v, ts, key)
  local ctx = ctxs[st]
  ctx.ts, ctx.key = ts, key
  cur_st, cur_ts = st, ts
  CALL(v, ctx, out)
end]],
  sink_fn = [[
local f, objs, ctxs, out_n = ...
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  local ctx = ctxs[st]
  ctx.ts, ctx.key = ts, key
  CALL(v, ctx)
end]],
  print = [[
local C, fmt, prefixes, fd, out_n, failed = ...
local type = type
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  if type(v) ~= "string" then v = fmt(v) end
  local p = prefixes[st]
  if #p > 0 then C.weir_out_write(fd, p, #p) end
  C.weir_out_write(fd, v, #v)
  -- an error is sticky: the last write returns any of the three
  if C.weir_out_write(fd, "\n", 1) ~= 0 then failed() end
end]],
  write_text = [[
local files, fmt, out_n, failed = ...
local type = type
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  if type(v) ~= "string" then v = fmt(v) end
  local ok, err = files[st]:write(v, "\n")
  if not ok then failed(st, err) end
end]],
  collect = [[
local values, out_n = ...
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  values[#values + 1] = v
end]],
  rebalance = [[
local dpush, n, counters = ...
return function(st, v, ts, key)
  local c = counters[st] + 1
  if c == n then c = 0 end
  counters[st] = c
  return dpush(c, v, ts)
end]],
  hash = [[
local dpush, keyf, maxp, C, to_subtask, slow_group = ...
local type = type
return function(st, v, ts)
  local k = keyf(v)
  local tk, kg = type(k), 0
  if tk == "string" then
    kg = C.weir_keygroup_of_string(k, #k, maxp)
  elseif tk == "number" then
    kg = C.weir_keygroup_of_number(k, maxp)
  else
    kg = slow_group(k)
  end
  return dpush(to_subtask[kg], v, ts, k)
end]],
  -- a hash exchange into one subtask: every key group goes there, so only check the key
  hash1 = [[
local dpush, keyf, slow_group = ...
local type = type
return function(st, v, ts)
  local k = keyf(v)
  local tk = type(k)
  if tk ~= "string" and tk ~= "number" then slow_group(k) end
  return dpush(0, v, ts, k)
end]],
  lines = [[
local ffi_string, emit, progress = ...
return function(events, i, j)
  for k = i, j - 1 do
    progress[1] = k
    local e = events[k]
    emit(0, ffi_string(e.ptr, e.len), nil)
  end
end]],
  elements = [[
local values, emit, progress = ...
return function(first, last)
  for i = first, last do
    progress[2] = i
    emit(0, values[i + 1], nil)
  end
end]],
  generate = [[
local f, objs, emit, progress, fail_nil, is_nil = ...
return function(first, last)
  for i = first, last do
    progress[2] = i
    local v = CALL(i)
    if is_nil(v) then fail_nil() end
    emit(0, v, nil)
  end
end]],
}

-- Typed sources: records filled in C arrive as one EV_RECORDS event per run; each is copied
-- into a fresh cdata (ct(buf[i])), so a record a user function keeps is never overwritten by
-- the next batch. Lines of a typed text source that C did not parse (socket, replay, or a
-- line C flagged malformed) are parsed here, by the same C function, straight into a record.
TEMPLATES.records = [[
local cast, ptr_t, ct, emit, progress = ...
return function(ptr, first, last)
  local buf = cast(ptr_t, ptr)
  for i = first, last do
    progress[2] = i
    emit(0, ct(buf[i]), nil)
  end
end]]
TEMPLATES.record_lines = [[
local C, ct, layout, emit, progress, malformed = ...
return function(events, i, j)
  for k = i, j - 1 do
    progress[1] = k
    local e = events[k]
    local r = ct()
    if C.weir_fields_parse(layout, e.ptr, e.len, r) ~= 0 then malformed(e) end
    emit(0, r, nil)
  end
end]]

-- Templates that run user code or write output record the running operator for the second
-- signal's message (weir_op_slot): one store per operator call. Exchanges and fan-outs do
-- not: they run no user code and call the next operator at once.
local NAMES_OPERATOR = { map = true, filter = true, flat_map = true, process = true,
  sink_fn = true, print = true, write_text = true, collect = true, generate = true }

local function fanout_source(n)
  local names = {}
  for i = 1, n do
    names[i] = "e" .. i
  end
  local body = {}
  for i = 1, n - 1 do
    body[i] = ("  %s(st, v, ts, key)"):format(names[i])
  end
  body[n] = ("  return %s(st, v, ts, key)"):format(names[n])
  return ("local %s = ...\nreturn function(st, v, ts, key)\n%s\nend"):format(
    table.concat(names, ", "), table.concat(body, "\n"))
end

-- Per-job state -----------------------------------------------------------------------------

local Job = {}
Job.__index = Job

---Builds one generated function from a template (compiled once per operator and template).
function Job:generate(node, what, rich, ...)
  local cache_key = node.id .. ":" .. what .. (rich and ":rich" or "")
  local factory = self.factories[cache_key]
  if not factory then
    local src = TEMPLATES[what]
    if what:sub(1, 7) == "fanout:" then
      src = fanout_source(tonumber(what:sub(8)))
    end
    src = src:gsub("CALL%(", rich and "f(objs[st], " or "f(")
    if what == "generate" and rich then
      src = src:gsub("objs%[st%]", "objs[0]")
    end
    if NAMES_OPERATOR[what] then
      src = src:gsub("^local ", "local OP_, OPID_, ", 1)
      src = src:gsub("\nreturn function%(([^)]*)%)\n",
        "\nreturn function(%1)\n  OP_[0] = OPID_\n", 1)
    end
    factory = assert(load(src, ("=weir op %d %s"):format(node.id, what)))
    self.factories[cache_key] = factory
  end
  if NAMES_OPERATOR[what] then
    return factory(self.op_slot, node.id, ...)
  end
  return factory(...)
end

local RuntimeContext = {}
RuntimeContext.__index = RuntimeContext
function RuntimeContext:subtask_index() return self.index end
function RuntimeContext:parallelism() return self.p end
function RuntimeContext:job_name() return self.name end
function RuntimeContext:max_parallelism() return self.maxp end

local ProcessContext = {}
ProcessContext.__index = ProcessContext
function ProcessContext:timestamp() return self.ts end
function ProcessContext:current_watermark() return self.inst.watermark end
function ProcessContext:current_processing_time() return self.job:now() end
function ProcessContext:current_key() return self.key end
function ProcessContext:output(t, v)
  if type(t) ~= "table" or not t.id then
    error("ctx:output: expected an output tag", 2)
  end
  if util.is_nil(v) then
    error("ctx:output: cannot emit nil", 2)
  end
  local e = self.node.side[t.id]
  if e then
    return e(self.inst.index, v, self.ts)
  end
end

function Job:now()
  return self.now_override or C.weir_rt_now(self.rt)
end

local function nil_result(what)
  return function()
    error(what .. " returned nil (records cannot be nil; use filter or flat_map to drop)", 0)
  end
end

---The function that sends an operator's output over one consumer edge.
function Job:sender(consumer)
  local d = consumer.node
  local port = d.inputs[consumer.port]
  if port.mode == "forward" then
    return d.push
  elseif port.mode == "rebalance" then
    local counters = {}
    for st = 0, port.node.parallelism - 1 do
      counters[st] = d.parallelism - 1 -- so each upstream subtask starts at subtask 0
    end
    return self:generate(d, "rebalance", false, d.push, d.parallelism, counters)
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
    f = self:generate(d, "hash1", false, d.push, port.key_fn, slow_group)
  else
    f = self:generate(d, "hash", false, d.push, port.key_fn, maxp, C, to_subtask, slow_group)
  end
  self.senders[f] = d
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

local function user_call(node)
  local f = node.fn
  if node.rich then
    f = node.fn[node.method] or node.fn[node.alias]
  end
  return f, node.rich
end

---Creates a node's subtasks and its push function (after those of all its consumers).
function Job:instantiate(node)
  node.instances, node.objs, node.ctxs = {}, nil, {}
  for st = 0, node.parallelism - 1 do
    local inst = { node = node, index = st, watermark = -INF }
    node.instances[st + 1] = inst
    if node.kind ~= "source" then
      inst.valve = ffi.gc(C.weir_valve_new(node.channels), C.weir_valve_free)
    end
    if node.rich then
      node.objs = node.objs or {}
      node.objs[st] = util.copy(node.fn)
      inst.obj = node.objs[st]
    end
    node.ctxs[st] = setmetatable({ inst = inst, node = node, job = self }, ProcessContext)
    self.instances[#self.instances + 1] = inst
  end
  self:outputs(node)
  local f, rich = user_call(node)
  local kind, objs, emit = node.kind, node.objs, node.emit
  if kind == "map" then
    node.push = self:generate(node, "map", rich, f, objs, emit, nil_result("map"),
      util.is_nil)
  elseif kind == "filter" then
    node.push = self:generate(node, "filter", rich, f, objs, emit)
  elseif kind == "flat_map" then
    node.push = self:generate(node, "flat_map", rich, f, objs, emit, util.is_nil)
  elseif kind == "process" then
    node.push = self:generate(node, "process", rich, f, objs, emit, node.ctxs,
      util.is_nil)
  elseif kind == "timestamps" then
    self:instantiate_timestamps(node)
  elseif kind == "window" then
    -- a window function runs on after it emits: the running operator is the window again
    local slot, id, downstream = self.op_slot, node.id, node.emit
    node.emit = function(st, v, ts, key)
      downstream(st, v, ts, key)
      slot[0] = id
    end
    windowing.instantiate(self, node)
  elseif kind == "sink" then
    self:instantiate_sink(node, f, rich)
  elseif kind == "source" then
    self:instantiate_source(node, f, rich)
  else
    error("weir: no code generator for operator kind " .. tostring(kind))
  end
  if node.push and (kind == "window" or kind == "timestamps") then
    -- their code is not generated from TEMPLATES: record the running operator here (the
    -- wrapper's tail call leaves push's frame for the error handler, so both are known)
    local push, slot, id = node.push, self.op_slot, node.id
    self.pushes[push] = node
    node.push = function(st, v, ts, key)
      slot[0] = id
      return push(st, v, ts, key)
    end
  end
  if node.push then
    self.pushes[node.push] = node
  end
end

function Job:instantiate_sink(node, f, rich)
  local s = node.sink
  if s == "print" then
    local prefixes = {}
    for st = 0, node.parallelism - 1 do
      prefixes[st] = format.prefix(node.print_id, st, node.parallelism)
    end
    local function failed()
      job_error(("%s: %s"):format(node.label, out_error_text(node.fd, C.weir_out_error(node.fd))))
    end
    node.push = self:generate(node, "print", false, C, format.value, prefixes, node.fd,
      self.out_count, failed)
  elseif s == "fn" then
    node.push = self:generate(node, "sink_fn", rich, f, node.objs, node.ctxs, self.out_count)
  elseif s == "collect" then
    node.push = self:generate(node, "collect", false, node.values, self.out_count)
  elseif s == "write_text" then
    local files, paths = {}, {}
    for st = 0, node.parallelism - 1 do
      files[st], paths[st] = self:open_file(node, st)
    end
    local function failed(st, err)
      job_error(("%s: cannot write %s: %s"):format(node.label, paths[st], tostring(err)))
    end
    node.push = self:generate(node, "write_text", false, files, format.value, self.out_count,
      failed)
  end
end

---The error for a line of a typed text source that does not parse: line number, field (number
---and name) and the line itself. Not per record: only a failing line gets here.
local function malformed_line(node, layout, e)
  local info = records.info(node.record)
  local line = ffi.string(e.ptr, e.len)
  local code = C.weir_fields_parse(layout, e.ptr, e.len, node.record())
  local reason, n = code % 256, math.floor(code / 256)
  local what
  if reason == tonumber(C.WEIR_FIELDS_COUNT) then
    if n == tonumber(C.WEIR_FIELDS_N_MAX) then -- saturated: count the separators here
      local sep = node.separator:byte()
      n = 1
      for i = 1, #line do
        if line:byte(i) == sep then n = n + 1 end
      end
    end
    what = ("expected %d field%s separated by %q, got %d"):format(#info.names,
      #info.names == 1 and "" or "s", node.separator, n)
  else
    local t = info.types[n]
    what = ("field %d (%s) "):format(n, info.names[n])
    if reason == tonumber(C.WEIR_FIELDS_RANGE) then
      what = what .. "is out of range for " .. t
    elseif t == "bool" then
      what = what .. "is not true, false, 1 or 0"
    elseif t == "float" or t == "double" then
      what = what .. "is not a number"
    else
      what = what .. "is not an integer"
    end
  end
  local shown = line
  if #shown > RECORD_CUT then
    shown = shown:sub(1, RECORD_CUT) .. "..."
  end
  node.bad_line = line -- for the error handler: the record that failed
  error(("line %d: %s: %s"):format(e.index, what,
    (("%q"):format(shown):gsub("\\\n", "\\n"))), 0)
end

---The drivers of a typed source (node.record): C records, and lines parsed here.
function Job:instantiate_record_source(node)
  local progress, ct = self.progress, node.record
  node.records = self:generate(node, "records", false, ffi.cast, ffi.typeof("const $ *", ct), ct,
    node.emit, progress)
  self.drivers[node.records] = node
  if node.source ~= "nexmark" then
    local layout = records.layout(ct, node.separator)
    node.layout = layout
    node.lines = self:generate(node, "record_lines", false, C, ct, layout, node.emit, progress,
      function(e) malformed_line(node, layout, e) end)
    self.drivers[node.lines] = node
  end
end

function Job:instantiate_source(node, f, rich)
  local progress = self.progress
  local s = node.source
  if node.record then
    return self:instantiate_record_source(node)
  end
  if s == "elements" then
    node.range = self:generate(node, "elements", false, node.values, node.emit, progress)
  elseif s == "generate" then
    node.range = self:generate(node, "generate", rich, f, node.objs, node.emit, progress,
      nil_result("generate"), util.is_nil)
  else
    node.lines = self:generate(node, "lines", false, ffi.string, node.emit, progress)
  end
  self.drivers[node.range or node.lines] = node
end

-- Watermarks and idleness ------------------------------------------------------------------
-- Watermarks and statuses are broadcast to every consumer subtask (subtask 0 first), each
-- through that subtask's valve; an operator whose valve output advances first fires its
-- event-time timers (on_watermark), then forwards the new watermark. Assigners replace what
-- comes from upstream (SEMANTICS §1.3): they forward nothing themselves.

local forward_watermark, forward_status
local OP_SLOT = C.weir_op_slot()

local function on_valve(d, flags)
  local node = d.node
  if bit.band(flags, 1) ~= 0 then
    local w = C.weir_valve_output(d.valve)
    d.watermark = w
    local hook = node.on_watermark
    if hook then
      OP_SLOT[0] = node.id -- event-time timers fire user code
      hook(d, w)
    end
    if not node.assigner_op then
      forward_watermark(d, w)
    end
  end
  if bit.band(flags, 2) ~= 0 and not node.assigner_op then
    forward_status(d, C.weir_valve_is_idle(d.valve) == 1)
  end
end

function forward_watermark(inst, w)
  local targets = inst.wm_targets
  for i = 1, #targets do
    local t = targets[i]
    local flags = C.weir_valve_watermark(t[1].valve, t[2], w)
    if flags > 0 then
      on_valve(t[1], flags)
    end
  end
end

function forward_status(inst, idle)
  local targets = inst.wm_targets
  for i = 1, #targets do
    local t = targets[i]
    local flags = C.weir_valve_status(t[1].valve, t[2], idle and 1 or 0)
    if flags > 0 then
      on_valve(t[1], flags)
    end
  end
end

local TIMESTAMPS = [[
local assign, gens, emitters, emit, bad_ts, MAX = ...
local type, abs, MIN = type, math.abs, -math.huge
return function(st, v, ts, key)
  local t = ts
  if assign then
    t = assign(v, ts)
    -- NaN and +-inf fail the range test, fractions `% 1`; not a tail call: the error handler
    -- finds this frame, so it names the record and the operator (and on_error routes it)
    if type(t) ~= "number" or not (abs(t) <= MAX) or t % 1 ~= 0 then bad_ts(t) end
  end
  emit(st, v, t)
  return gens[st]:on_event(v, t or MIN, emitters[st])
end]]
TEMPLATES.timestamps = TIMESTAMPS

local function bad_ts(t)
  error(("the timestamp assigner returned %s, %s"):format(duration.show(t),
    duration.time_problem(t, duration.MAX_TIME, "2^52")), 0)
end

---The assign_timestamps_and_watermarks operator: a generator and an emitter per subtask.
function Job:instantiate_timestamps(node)
  local strategy = node.strategy
  node.assigner_op = true
  node.gens, node.emitters = {}, {}
  local sources = self:feeding_sources(node)
  local no_guard = os.getenv("WEIR_TEST_NO_QUIET_GUARD") ~= nil -- test-only: see backpressure
  local genv = {
    now = function() return self:now() end,
    arrival = function() return self.arrival end,
    quiet = function()
      if no_guard then
        return true
      end
      for _, src in ipairs(sources) do
        if C.weir_source_pending(self.rt, src.src_id) ~= 0 then
          return false
        end
      end
      return true
    end,
  }
  for _, inst in ipairs(node.instances) do
    local st = inst.index
    node.gens[st] = watermarks.generator(strategy, genv)
    node.emitters[st] = watermarks.emitter(function(w)
      inst.watermark = w
      forward_watermark(inst, w)
    end, function(idle)
      forward_status(inst, idle)
    end)
  end
  node.push = self:generate(node, "timestamps", false, strategy.assigner, node.gens,
    node.emitters, node.emit, bad_ts, duration.MAX_TIME)
  -- upstream watermarks are ignored, except the end of input (SEMANTICS §1.3)
  node.on_watermark = function(inst, w)
    if w == INF then
      node.emitters[inst.index]:emit_watermark(INF)
    end
  end
  self.assigners[#self.assigners + 1] = node
end

---The source nodes upstream of a node (through every input), in declaration order.
function Job.feeding_sources(_, node)
  local seen, out = {}, {}
  local function walk(n)
    if seen[n] then
      return
    end
    seen[n] = true
    if n.kind == "source" then
      out[#out + 1] = n
    end
    for _, p in ipairs(n.inputs) do
      walk(p.node)
    end
  end
  walk(node)
  table.sort(out, function(a, b) return a.id < b.id end)
  return out
end

---A periodic tick: every generator's on_periodic_emit, in operator order, subtask 0 first.
function Job:tick()
  for _, node in ipairs(self.assigners) do
    for st = 0, node.parallelism - 1 do
      node.gens[st]:on_periodic_emit(node.emitters[st])
    end
  end
  if self.stall_ms > 0 then
    status.check_stalls(self, self.stall_ms)
  end
end

---weir run --progress: a status line at most once a second of processing time.
function Job:show_progress(final)
  local now = self:now()
  local ps = self.progress_state
  if not final and ps.printed and now - ps.printed < 1000 then
    return
  end
  ps.printed = now
  local line = status.progress_line(self, ps)
  C.weir_out_flush()
  if self.plan.env.job.stderr_tty then
    io.stderr:write("\r\27[K", line, final and "\n" or "")
  else
    io.stderr:write(line, "\n")
  end
end

---Re-arms the runtime's wakeup for the earliest processing-time timer of any operator.
function Job:processing_timers_changed()
  local due = INF
  for _, node in ipairs(self.timer_nodes) do
    for _, inst in ipairs(node.instances) do
      local t = windowing.next_processing_time(node, inst)
      if t < due then
        due = t
      end
    end
  end
  if due ~= self.wakeup and self.rt ~= nil then
    self.wakeup = due
    C.weir_rt_set_wakeup(self.rt, due)
  end
end

---Fires every processing-time timer due at the current clock reading (the clock reads T+1
---while the timer for T fires), operator by operator, subtask 0 first.
function Job:fire_processing_timers(upto, as_if_due)
  self.wakeup = nil
  local slot = self.op_slot
  for _, node in ipairs(self.timer_nodes) do
    slot[0] = node.id
    for _, inst in ipairs(node.instances) do
      node.on_processing_time(inst, upto, as_if_due)
    end
  end
  self:processing_timers_changed()
end

-- Sources -----------------------------------------------------------------------------------

local function check_id(self, id, what)
  if id < 0 then
    job_error(("%s: %s"):format(what, ffi.string(C.weir_rt_error(self.rt))))
  end
  return id
end

function Job:open_sources(clock)
  local virtual, start = false, nil
  local replays = {}
  for _, node in ipairs(self.plan.sources) do
    if node.source == "replay" then
      local fh, err = io.open(node.path, "rb")
      if not fh then
        job_error(("replay: cannot open %s"):format(err or node.path))
      end
      local text = fh:read("*a")
      fh:close()
      local ok, entries, first = pcall(replay.parse, text, node.path)
      if not ok then
        job_error(tostring(entries))
      end
      replays[node] = { text = text, entries = entries }
      virtual = true
      start = start and math.min(start, first) or first
    end
  end
  if clock then
    virtual = clock == "virtual"
  end
  self.rt = C.weir_rt_new(virtual and C.WEIR_CLOCK_VIRTUAL or C.WEIR_CLOCK_REAL, start or 0)
  if self.rt == nil then -- the replay parser keeps start in range; libuv may still fail
    job_error(("cannot start the runtime (%s clock from %s ms)"):format(
      virtual and "virtual" or "real", duration.show(start or 0)))
  end
  for _, node in ipairs(self.plan.sources) do
    local s, rt, id = node.source, self.rt, nil
    local what = node.label
    if s == "elements" then
      id = C.weir_source_generate(rt, node.count, 0)
    elseif s == "generate" then
      id = C.weir_source_generate(rt, node.count, node.rate)
    elseif s == "file" then
      id = C.weir_source_file(rt, node.path, node.delimiter, node.max_line_bytes or 0)
    elseif s == "stdin" then
      id = C.weir_source_stdin(rt, node.delimiter, node.max_line_bytes or 0)
    elseif s == "socket" then
      id = C.weir_source_socket(rt, node.host, node.port, node.delimiter, node.max_retry,
        node.max_line_bytes or 0)
    elseif s == "manual" then
      id = C.weir_source_manual(rt)
    elseif s == "nexmark" then
      local cfg = ffi.new("weir_nexmark_config_t", node.config)
      cfg.base_time_ms = node.config.base_time
      id = C.weir_source_nexmark(rt, node.count, cfg, ffi.sizeof(node.record))
    elseif s == "replay" then
      local r = replays[node]
      id = check_id(self, C.weir_source_replay(rt, r.text, #r.text), what)
      for _, e in ipairs(r.entries) do
        check_id(self, C.weir_replay_add(rt, id, e[1], e[2], e[3], e[4]), what)
      end
    end
    id = check_id(self, id, what)
    node.src_id = id
    if node.layout and (s == "file" or s == "stdin") then
      check_id(self, C.weir_source_parse_fields(rt, id, node.layout), what)
    end
    if s == "replay" then
      C.weir_source_set_name(rt, id, node.replaced and ("%s (replaces %s)"):format(node.path,
        node.replaced) or node.path)
    end
    self.by_source[id] = node
  end
end

-- The driver --------------------------------------------------------------------------------

function Job:open_functions()
  for _, inst in ipairs(self.instances) do
    local node = inst.node
    local obj = inst.obj
    if obj and type(obj.open) == "function" then
      local rtc = setmetatable({ index = inst.index, p = node.parallelism,
        name = self.plan.job_name, maxp = node.max_parallelism or 128 }, RuntimeContext)
      local ok, err = xpcall(obj.open, debug.traceback, obj, rtc)
      if not ok then
        job_error(("%s, subtask %d/%d: open: %s"):format(node.label, inst.index + 1,
          node.parallelism, tostring(err)))
      end
    end
  end
end

---Opens the file of one write_text subtask: a file at parallelism 1, else DIR/<subtask+1>.
---Returns the file and its path.
function Job:open_file(node, st)
  local path = node.path
  if node.parallelism > 1 then
    path = node.path .. "/" .. (st + 1)
    if st == 0 then
      local rc = C.weir_out_mkdirs(node.path)
      if rc ~= 0 then
        job_error(("%s: cannot create directory %s: %s"):format(node.label, node.path,
          ffi.string(C.weir_strerror(rc))))
      end
    end
  end
  if not node.overwrite then
    local fh = io.open(path, "rb")
    if fh then
      fh:close()
      job_error(("%s: %s already exists (use write_text(path, {overwrite = true}))")
        :format(node.label, path))
    end
  end
  local fh, err = io.open(path, "wb")
  if not fh then
    job_error(("%s: cannot write %s"):format(node.label, tostring(err)))
  end
  self.files[#self.files + 1] = { fh = fh, path = path, node = node }
  return fh, path
end

function Job:close_functions()
  for _, inst in ipairs(self.instances) do
    local obj = inst.obj
    if obj and type(obj.close) == "function" then
      local ok, err = xpcall(obj.close, debug.traceback, obj)
      if not ok then
        job_error(("%s, subtask %d/%d: close: %s"):format(inst.node.label, inst.index + 1,
          inst.node.parallelism, tostring(err)))
      end
    end
  end
  self:close_files(true)
end

---Closes every write_text file; with check, a failed close (the last buffered data could not
---be written: disk full, I/O error) fails the job, after the other files are closed.
function Job:close_files(check)
  local failure
  for _, f in ipairs(self.files) do
    local ok, err = f.fh:close()
    if not ok and not failure then
      failure = ("%s: cannot write %s: %s"):format(f.node.label, f.path, tostring(err))
    end
  end
  self.files = {}
  if failure and check then
    job_error(failure)
  end
end

function Job:source_ended(src, flags)
  self.live = self.live - 1
  if flags == END_EXHAUSTED and not self.stopped then
    local inst = self.by_source[src].instances[1]
    inst.watermark = INF
    forward_watermark(inst, INF)
  end
end

function Job:dispatch(n, k, sub)
  local events, progress = self.events, self.progress
  local by_source = self.by_source
  while k < n do
    local e = events[k]
    local kind = e.kind
    if kind == EV_LINE then
      local src = e.source
      local j = k + 1
      while j < n and events[j].kind == EV_LINE and events[j].source == src do
        j = j + 1
      end
      self.arrival = e.time_ms
      self.records_in = self.records_in + (j - k)
      by_source[src].lines(events, k, j)
      k = j
    elseif kind == EV_RECORDS then
      progress[1] = k
      local first = sub or 0
      sub = nil
      self.arrival = e.time_ms
      self.records_in = self.records_in + (e.len - first)
      by_source[e.source].records(e.ptr, first, e.len - 1)
      k = k + 1
    elseif kind == EV_RANGE then
      progress[1] = k
      local first = sub or e.index
      sub = nil
      self.arrival = e.time_ms
      self.records_in = self.records_in + (e.index + e.len - first)
      by_source[e.source].range(first, e.index + e.len - 1)
      k = k + 1
    else
      progress[1] = k
      if kind == EV_END then
        self:source_ended(e.source, e.flags)
      elseif kind == EV_STOP then
        self.stopped = true
      elseif kind == EV_TICK then
        self:tick()
      elseif kind == EV_STATUS then
        C.weir_out_flush()
        io.stderr:write(status.text(status.collect(self)))
      elseif kind == EV_TIMER then
        self:fire_processing_timers(e.time_ms - 1)
      end
      k = k + 1
    end
  end
end

-- Failures ----------------------------------------------------------------------------------
-- The xpcall handler (error_handler) runs where the error happened, before the stack unwinds.
-- It finds the innermost frame weir recognises -- an operator's push function, a key
-- selector's sender, a source driver, or a window operator's watermark or timer entry
-- (job.firers) -- and reads the subtask, record and key from its arguments; then, above it,
-- the window operator's frames that say which (key, window) is firing (job.places) and the
-- trigger or evictor method that failed (job.user_places). None of it costs anything per
-- record. The handler survives anything: a stack overflow (it reads the failed coroutine's
-- stack from another one), an error value that cannot be printed, an error inside the analysis
-- (the failure then names less). When LuaJIT runs no handler at all (out of memory), Job:failed
-- gets a bare message and names what it can (Job:source_place).

local MAX_SCAN = 250 -- frames searched from the error (and from the bottom of a deep stack)

local getinfo, getlocal = debug.getinfo, debug.getlocal

-- The n-th local of the frame at `level` in thread th.
local function loc(th, level, n)
  local _, v = getlocal(th, level, n)
  return v
end

local function frame_kind(job, f)
  if job.pushes[f] then
    return "push"
  elseif job.senders[f] then
    return "sender"
  elseif job.drivers[f] then
    return "driver"
  elseif job.firers[f] then
    return "firer"
  end
end

-- The level in th of the innermost recognised frame, and its kind.
local function innermost_frame(job, th)
  for level = 0, MAX_SCAN do
    local d = getinfo(th, level, "f")
    if not d then
      return nil
    end
    local kind = frame_kind(job, d.func)
    if kind then
      return level, kind
    end
  end
  -- a deep stack (a stack overflow): the recognised frames are near its bottom
  local lo, hi = MAX_SCAN, MAX_SCAN * 2
  while getinfo(th, hi, "f") do
    lo, hi = hi, hi * 2
  end
  while hi - lo > 1 do
    local mid = math.floor((lo + hi) / 2)
    if getinfo(th, mid, "f") then
      lo = mid
    else
      hi = mid
    end
  end
  local found, kind, since = nil, nil, 0
  for level = lo, MAX_SCAN, -1 do
    local k = frame_kind(job, getinfo(th, level, "f").func)
    if k then
      found, kind, since = level, k, 0
    elseif found then
      since = since + 1
      if since > MAX_SCAN then
        break
      end
    end
  end
  return found, kind
end

-- Fills info from the stack of thread th, the one that failed (see Failures above).
local function analyse(job, info, th)
  local ok, tb = pcall(debug.traceback, th, info.text, 0)
  if ok then
    info.traceback = tb
  end
  local stop, kind = innermost_frame(job, th)
  if not stop then
    return
  end
  local f = getinfo(th, stop, "f").func
  local progress = job.progress
  if kind == "push" then
    local node = job.pushes[f]
    info.node, info.st = node, loc(th, stop, 1)
    info.record, info.has_record = loc(th, stop, 2), true
    local key = loc(th, stop, 4)
    if key ~= nil then
      info.key, info.has_key = key, true
    end
  elseif kind == "sender" then
    info.node, info.key_selector, info.has_record = job.senders[f], true, true
    info.record = loc(th, stop, 2)
  elseif kind == "driver" then
    local node = job.drivers[f]
    info.node, info.st = node, 0
    if node.source == "generate" then
      info.record, info.has_record = progress[2], true
    elseif node.bad_line then
      -- a malformed line of a typed text source: the message already shows it
      info.record, info.routed_record, node.bad_line = node.bad_line, true, nil
    end
    return
  else
    local fr = job.firers[f]
    local inst = loc(th, stop, 1)
    info.node, info.st = fr.node, inst.index
    if fr.processing then
      if loc(th, stop, 3) then
        info.fired_by = "the end of input (pending processing-time timers)"
      else
        info.fired_by = "processing-time timers due at " .. format.value(loc(th, stop, 2))
      end
    else
      local w = loc(th, stop, 2)
      info.fired_by = w == INF and "the end of input (the final watermark)"
        or ("the watermark " .. format.value(w))
    end
  end
  -- a window operator's frames above: which (key, window), and which trigger or evictor method
  local node = info.node
  local inst = node and info.st and node.instances and node.instances[info.st + 1]
  if not (inst and node.kind == "window") then
    return
  end
  local place, plevel, user, ulevel
  for level = stop - 1, math.max(0, stop - MAX_SCAN), -1 do
    local fn = getinfo(th, level, "f").func
    local p = job.places[fn]
    if p and p.node == node then
      place, plevel = p, level
    end
    local u = job.user_places[fn]
    if u and u[node] then
      user, ulevel = u[node], level
    end
  end
  if user then
    info.what = user.what
  end
  local tctx = inst.tctx
  if user and user.tctx and tctx and tctx.window and (not place or ulevel < plevel) then
    -- trigger and evictor methods: the trigger context says their key and window
    info.key, info.window = tctx.key, tctx.window
  elseif place then
    local key
    if place.kid then
      local kid = loc(th, plevel, place.kid)
      key = windowing.key_of(node, inst, kid)
    else
      key = loc(th, plevel, place.key)
    end
    local w = place.win and loc(th, plevel, place.win)
    if not w then
      if place.range then
        local r = loc(th, plevel, place.range)
        w = windows.window(r.start, r.stop)
      elseif place.size then
        local a = loc(th, plevel, place.start)
        w = windows.window(a, a + place.size)
      else
        w = windows.window(loc(th, plevel, place.start), loc(th, plevel, place.stop))
      end
    end
    info.key, info.window = key, w
  end
  info.has_key = node.keyed and true or nil
end

---The xpcall handler: runs where the error happened (see Failures above). Returns the table
---info: msg, text, traceback, and where found: node, st, record (has_record), key (has_key),
---window, what, fired_by, key_selector. The analysis runs in a coroutine of its own, on the
---stack of the job's worker (Job:protected): after a stack overflow the failing stack has
---about 40 slots left (LuaJIT grows it by 2 * LUA_MINSTACK for the handler), too few for it.
function Job:error_handler()
  local job = self
  return function(msg)
    if type(msg) == "table" and (msg.weir_job_error or msg.weir_info) then
      return msg -- already a job failure, or a failure a guard passes on
    end
    local info = { weir_info = true, msg = msg, text = msg, traceback = "" }
    if type(msg) ~= "string" then
      local ok, text = pcall(message_text, msg)
      info.text = ok and text or "an error value that cannot be shown"
    end
    local th = coroutine.running()
    if th then
      local ok = coroutine.resume(coroutine.create(analyse), job, info, th)
      if not ok then
        -- a half-found place would mislead
        info.node, info.st, info.key, info.has_key, info.window = nil, nil, nil, nil, nil
        info.fired_by, info.what, info.record, info.has_record = nil, nil, nil, nil
        info.key_selector, info.routed_record = nil, nil
      end
    else
      local ok, tb = pcall(debug.traceback, info.text, 2)
      info.traceback = ok and tb or ""
    end
    return info
  end
end

-- The job's worker: a coroutine that runs f(...) under xpcall with the job's handler, again
-- and again, so that a failure's stack can be read from another coroutine.
local function serve(handler, f, ...)
  return serve(handler, coroutine.yield(xpcall(f, handler, ...)))
end

local function resumed(ok, ...)
  if ok then
    return ...
  end
  return false, (...) -- the worker itself failed: cannot happen past its xpcall, but say so
end

---xpcall(f, handler, ...) in the job's worker coroutine: returns what xpcall returns.
function Job:protected(f, ...)
  self.handler = self.handler or self:error_handler()
  local co = self.worker
  if not co or coroutine.status(co) ~= "suspended" then
    local handler = self.handler
    -- the frames outside the worker (the script's env:execute() call), for failure_text
    self.outer_frames = debug.traceback("", 2):match("\nstack traceback:\n(.*)$")
    co = coroutine.create(function(g, ...)
      return serve(handler, g, ...)
    end)
    self.worker = co
  end
  return resumed(coroutine.resume(co, f, ...))
end

---Where the job was when a failure found no operator -- out of memory (LuaJIT calls no
---handler then), or a stack overflow so deep in compiled code that LuaJIT had no room left to
---run one: the source event being delivered, and its record when there is one.
---@return string, boolean, any place, has_record, record
function Job:source_place()
  if self.ending then
    return "at the end of input", false
  end
  local progress = self.progress
  local e = self.events[progress[1]]
  local src = e and self.by_source[e.source]
  local kind = e and e.kind
  if src and kind == EV_LINE then
    return ("while weir delivered line %d of %s"):format(e.index, src.label), true,
      ffi.string(e.ptr, e.len)
  elseif src and kind == EV_RANGE then
    local i = progress[2]
    if src.source == "elements" then
      return ("while weir delivered element %d of %s"):format(i + 1, src.label), true,
        src.values[i + 1]
    end
    return ("while weir delivered record %d of %s"):format(i, src.label), true, i
  elseif src and kind == EV_RECORDS then
    return ("while weir delivered %s %d of %s"):format(src.source == "nexmark" and "record"
      or "line", e.index + progress[2], src.label), false
  elseif src and kind == EV_END then
    return "at the end of " .. src.label, false
  elseif kind == EV_TICK then
    return "during a periodic watermark tick", false
  elseif kind == EV_TIMER then
    return "while processing-time timers fired", false
  end
  return "while weir ran the job", false
end

---Whether failure info can go to the on_error side output: a user function's failure on a
---record or in a window's fire, at a known operator and subtask.
function Job:routable(info)
  return self.plan.env.on_error and not info.fatal and info.node and info.st
    and not info.key_selector and info.node.side
    and (info.has_record or info.routed_record or info.window) and true
end

---Sends failure info to the on_error side output of its operator (or, when no one reads it,
---to stderr). A fire's record: { value = the record when one drove the fire, error,
---operator, key, window } (API.md, Errors).
function Job:route(info)
  local on_error = self.plan.env.on_error
  local node, st = info.node, info.st
  local rec = { value = info.record, error = info.text, operator = node.label }
  if info.window then
    rec.key, rec.window = info.key, info.window
  end
  local side = node.side[on_error.id]
  if side then
    side(st, rec, nil)
  else
    if info.has_record then
      self.unread_errors = self.unread_errors + 1
    else
      self.unread_fires = self.unread_fires + 1
    end
    C.weir_out_flush()
    local what = info.has_record and ("record " .. record_text(info.record)) or
      ("key " .. record_text(info.key) .. ", window " .. tostring(info.window))
    io.stderr:write(("weir: %s: %s (%s; no one reads side output '%s')\n"):format(
      node.label, info.text, what, on_error.id))
  end
end

---For a window operator: guard(f, ...) calls f(...) and returns true and its results; when f
---fails in a way on_error routes, it routes the failure and returns false; other failures go
---on up (the job fails). nil without on_error: then fires are not protected, and cost nothing
---more.
function Job:fire_guard()
  if not self.plan.env.on_error then
    return nil
  end
  self.handler = self.handler or self:error_handler()
  local handler = self.handler
  local function finish(ok, ...)
    if ok then
      return true, ...
    end
    local info = ...
    if type(info) ~= "table" or info.weir_job_error or not self:routable(info) then
      if type(info) == "table" and info.weir_info then
        info.fatal = true
      end
      error(info, 0)
    end
    self:route(info)
    return false
  end
  return function(f, ...)
    return finish(xpcall(f, handler, ...))
  end
end

---The text of a failure that ends the job: where (operator, subtask; key, window and what fired
---it; the record), what, and the user's part of the traceback.
function Job:failure_text(info)
  local node, st = info.node, info.st
  local where = node and node.label
  if info.key_selector then
    where = "key_by (key selector feeding " .. where .. ")"
  elseif node and st then
    where = ("%s, subtask %d/%d"):format(where, st + 1, node.parallelism)
  end
  if where and info.what then
    where = where .. ", " .. info.what
  end
  local text = info.text
  if where then
    text = ("%s: %s"):format(where, text)
  else
    -- no handler ran (out of memory): a window whose watermark fires were cut short says where
    for _, n in ipairs(self.timer_nodes) do
      for _, inst in ipairs(n.instances) do
        if inst.firing and not where then
          where = ("%s, subtask %d/%d, firing its windows"):format(n.label, inst.index + 1,
            n.parallelism)
        end
      end
    end
    if not where then
      local place, has, rec = self:source_place()
      where = place
      if has and not info.has_record then
        info.has_record, info.record = true, rec
      end
    end
    text = ("%s (%s)"):format(text, where)
  end
  if info.has_key then
    text = text .. "\n  key: " .. record_text(info.key)
  end
  if info.window then
    text = text .. "\n  window: " .. tostring(info.window)
  end
  if info.fired_by then
    text = text .. "\n  fired by: " .. info.fired_by
  end
  if info.has_record then
    text = text .. "\n  record: " .. record_text(info.record)
    local e = self.events[self.progress[1]]
    if e.kind == EV_RECORDS and not info.fired_by then
      -- which one: a typed text source counts lines, a generator records from 0
      local src = self.by_source[e.source]
      text = text .. (" (%s %d of %s)"):format(src.source == "nexmark" and "record" or "line",
        e.index + self.progress[2], src.label)
    end
  end
  local full = info.traceback
  if type(full) == "string" and self.outer_frames and full:find("\nstack traceback:\n") then
    full = full .. "\n" .. self.outer_frames
  end
  local tb = user_traceback(full)
  if os.getenv("WEIR_DEBUG") and type(full) == "string" then
    tb = full
  end
  if tb ~= "" then
    text = text .. "\n" .. tb
  end
  return text
end

---Turns a failure caught by the batch xpcall into a routed error record (returning where to
---resume) or a job failure. info is the handler's table, or a bare message when LuaJIT called
---no handler (out of memory) or the handler itself failed.
local function out_of_memory(info)
  return info == "not enough memory" or type(info) == "table" and info.msg == "not enough memory"
end

---Failure info as the handler makes it, from whatever the batch's xpcall returned.
local function as_info(info)
  if type(info) ~= "table" or not (info.weir_info or info.weir_job_error) then
    return { weir_info = true, msg = info, text = message_text(info), traceback = "" }
  end
  return info
end

---Out of memory: what is still held may fill the heap, so give back the reserve first.
function Job:release_reserve(info)
  if out_of_memory(info) and self.reserve then
    self.reserve = nil
    collectgarbage()
  end
end

function Job:failed(info, fatal)
  self:release_reserve(info)
  info = as_info(info)
  if info.weir_job_error then
    error(info, 0)
  end
  if type(info.msg) == "table" and info.msg.weir_job_error then
    error(info.msg, 0)
  end
  local progress = self.progress
  local e = self.events[progress[1]]
  local kind = e.kind
  if not fatal and self:routable(info) and not info.fired_by
      and (kind == EV_LINE or kind == EV_RANGE or kind == EV_RECORDS) then
    -- what reads the side output may fail too: that fails the job, named as any failure
    local ok, why = self:protected(self.route, self, info)
    if not ok then
      return self:failed(why, true)
    end
    if kind == EV_LINE then
      return progress[1] + 1, nil
    end
    if kind == EV_RECORDS then
      if progress[2] < e.len - 1 then
        return progress[1], progress[2] + 1
      end
      return progress[1] + 1, nil
    end
    if progress[2] < e.index + e.len - 1 then
      return progress[1], progress[2] + 1
    end
    return progress[1] + 1, nil
  end
  job_error(self:failure_text(info))
end

---Dispatches the n events of one poll, one xpcall per batch (resuming past routed errors).
function Job:handle(n)
  local k, sub = 0, nil
  while true do
    local ok, info = self:protected(self.dispatch, self, n, k, sub)
    if ok then
      break
    end
    if C.weir_mem_alarm() ~= 0 then
      self:release_reserve(info)
      self:check_memory(info) -- a refused allocation is the job's failure, not the record's
    end
    k, sub = self:failed(info)
  end
  if C.weir_mem_alarm() ~= 0 then
    self:check_memory()
  end
  if self.progress_on then
    self:show_progress(false)
  end
end

---One poll: returns the number of events it got (0: nothing will ever come again).
function Job:poll()
  local n = C.weir_loop_poll(self.rt, self.events, self.batch)
  if n < 0 then
    job_error(ffi.string(C.weir_rt_error(self.rt)))
  end
  return n
end

function Job:run_loop()
  while self.live > 0 do
    local n = self:poll()
    if n == 0 then
      break
    end
    self:handle(n)
  end
end

---Per window operator: open (key, window) slots, buffered elements, C bytes of the store,
---pending timers and dropped late records, summed over its subtasks, keyed by label; and
---memory (weir.memory.figures, or the figures given).
local STATS = { "open_windows", "elements", "store_bytes", "event_timers", "processing_timers" }

function Job:metrics(figures)
  -- the memory account's figures are m.memory, outside what pairs() lists: the operators
  local m = setmetatable({}, { __index = { memory = figures or memory.figures() } })
  for _, node in ipairs(self.timer_nodes) do
    local t = { open_windows = 0, elements = 0, store_bytes = 0, event_timers = 0,
                processing_timers = 0, late_dropped = node.late_dropped or 0 }
    for _, inst in ipairs(node.instances) do
      local ws = windowing.stats(node, inst)
      for _, what in ipairs(STATS) do
        t[what] = t[what] + ws[what]
      end
    end
    m[node.label] = t
  end
  return m
end

---The window operator holding the most C state (then the most windows and elements), from
---Job:metrics(): {label, open_windows, elements, store_bytes}; nil without window operators.
local function most_state(m)
  local best
  for label, t in pairs(m) do
    local size = t.open_windows + t.elements
    if not best or t.store_bytes > best.store_bytes or (t.store_bytes == best.store_bytes
        and (size > best.size or (size == best.size and label < best.label))) then
      best = { label = label, open_windows = t.open_windows, elements = t.elements,
               store_bytes = t.store_bytes, size = size }
    end
  end
  return best
end

---The memory account rang (runtime/mem.c): after a collection, either weir goes on or the job
---fails with the figures and the operator holding the most state. M.execute still runs the
---user's close(), and the output is flushed.
function Job:check_memory(info)
  local why, figures = memory.check()
  if not why then
    return
  end
  local m = self:metrics(figures)
  self.plan.env.final_metrics = m
  local text = memory.failure_text(why, figures, most_state(m))
  if info ~= nil and not (type(info) == "table" and info.weir_job_error) then
    -- where the allocation failed: the operator or record, as for any failure
    local i = as_info(info)
    if out_of_memory(info) then
      i.text = "the allocation was refused"
    end
    local ok, where = pcall(self.failure_text, self, i)
    if ok then
      text = text .. "\n  " .. where:gsub("\n", "\n  ")
    end
  end
  error({ weir_job_error = true, memory = true, text = text }, 0)
end

---After the last source: weir's default fires every pending processing-time timer, in time
---order, after the final watermark; end_of_input = "flink" drops them as Flink does.
function Job:end_of_input()
  if self.stopped or self.plan.env.end_of_input == "flink" then
    return
  end
  self.ending = true
  local ok, info = self:protected(function()
    -- in global time order: everything due at the earliest pending time, then the next
    while true do
      local due = INF
      for _, node in ipairs(self.timer_nodes) do
        for _, inst in ipairs(node.instances) do
          due = math.min(due, windowing.next_processing_time(node, inst))
        end
      end
      if due == INF then
        break
      end
      self:fire_processing_timers(due, true)
    end
  end)
  if not ok then
    if C.weir_mem_alarm() ~= 0 then
      self:release_reserve(info)
      self:check_memory(info)
    end
    self:failed(info, true)
  end
end

function Job:report_drops()
  for _, node in ipairs(self.plan.sources) do
    local dropped = C.weir_source_stat(self.rt, node.src_id, C.WEIR_STAT_DROPPED)
    if dropped > 0 then
      io.stderr:write(("weir: %s: %d record(s) could not be delivered (longer than "
        .. "max_line_bytes)\n"):format(node.label, dropped))
    end
  end
  for _, node in ipairs(self.plan.nodes) do
    if node.late_dropped and node.late_dropped > 0 then
      io.stderr:write(("weir: %s: %d late record(s) dropped (no side_output_late_data)\n")
        :format(node.label, node.late_dropped))
    end
  end
  if self.unread_errors > 0 then
    io.stderr:write(("weir: %d failed record(s) went to an error side output no one reads\n")
      :format(self.unread_errors))
  end
  if self.unread_fires > 0 then
    io.stderr:write(("weir: %d failed window fire(s) went to an error side output no one "
      .. "reads\n"):format(self.unread_fires))
  end
end

---A job, built but not started.
---@param plan table from weir.plan.build
function M.new(plan)
  return setmetatable({
    plan = plan, factories = {}, instances = {}, pushes = {}, senders = {}, drivers = {},
    firers = {}, places = {}, user_places = {},
    by_source = {}, files = {}, progress = { 0, 0 }, events = event_array_t(BATCH),
    assigners = {}, timer_nodes = {}, check_triggers = plan.env.job.check_triggers,
    live = #plan.sources, stopped = false, unread_errors = 0, unread_fires = 0, arrival = 0,
    records_in = 0,
    batch = math.min(BATCH, plan.env.batch_size or BATCH), out_count = { 0 },
    progress_state = {}, op_slot = C.weir_op_slot(),
    -- memory given back when LuaJIT runs out, so that the failure can still be reported
    reserve = string.rep("\0", RESERVE_BYTES),
  }, Job)
end

---Instantiates every operator, opens the sources and user functions, and starts the runtime.
---opts.clock ("virtual" or "real") overrides the clock chosen from the sources; opts.repl
---({interactive, history}) opens the REPL's input on the job's runtime.
function Job:start(opts)
  opts = opts or {}
  local plan = self.plan
  M.current = self
  -- the job's memory limit: --max-memory (set by weir.main) wins over weir.env{max_memory};
  -- setting it again also clears what an earlier job in this process left
  local bytes, text = memory.limit()
  self.saved_limit = { bytes, text }
  if plan.env.max_memory and not plan.env.job.max_memory then
    bytes, text = plan.env.max_memory, "max_memory " .. plan.env.max_memory_text
  end
  memory.set_limit(bytes, text)
  for i = #plan.nodes, 1, -1 do
    self:instantiate(plan.nodes[i])
  end
  self:open_sources(opts.clock)
  self:open_functions()
  local job = plan.env.job
  self.progress_on = job.progress and job.mode == "run"
  self.stall_ms = 30000
  if job.stall_warning then
    local ok, ms = pcall(duration.parse, job.stall_warning, "--stall-warning")
    if not ok or ms < 0 then
      error({ usage = true, msg = ("--stall-warning: invalid duration %q"):format(
        job.stall_warning) }, 0)
    end
    self.stall_ms = ms
  end
  if #self.assigners > 0 and plan.env.auto_watermark_interval > 0 then
    C.weir_rt_set_tick(self.rt, plan.env.auto_watermark_interval)
  elseif self.progress_on then
    C.weir_rt_set_tick(self.rt, 1000) -- only to redraw the progress line
  end
  if opts.repl then
    if C.weir_repl_open(self.rt, opts.repl.interactive and 1 or 0, opts.repl.history) < 0 then
      job_error(ffi.string(C.weir_rt_error(self.rt)))
    end
  end
  for _, node in ipairs(plan.nodes) do
    C.weir_rt_label_op(self.rt, node.id, node.label)
  end
  if C.weir_rt_start(self.rt) < 0 then
    job_error(ffi.string(C.weir_rt_error(self.rt)))
  end
end

---After the last source (or a stop): end of input, final metrics, close() of user functions.
function Job:finish()
  self:end_of_input()
  if C.weir_mem_alarm() ~= 0 then
    self:check_memory()
  end
  if self.progress_on then
    self:show_progress(true)
  end
  self.plan.env.final_metrics = self:metrics()
  self.plan.env.final_status = status.collect(self)
  self:close_functions()
  self:report_drops()
  if self.stopped then
    self:report_stop()
  end
end

---A stop by signal fires nothing (API.md, Signals): say what each window operator dropped.
function Job:report_stop()
  for _, node in ipairs(self.timer_nodes) do
    local m = self.plan.env.final_metrics[node.label]
    if node.kind == "window" and m and m.open_windows > 0 then
      io.stderr:write(("weir: %s: stopped with %d pending window(s) holding %d element(s); "
        .. "dropped (a stop fires no window)\n"):format(node.label, m.open_windows, m.elements))
    end
  end
end

---After the final flush: a stdout that failed (the job fails) or stalled during a stop.
function Job:check_output(code)
  local lost = C.weir_out_lost()
  if lost > 0 then
    io.stderr:write(("weir: stop: standard output took no data for 5s; up to %d byte(s) of "
      .. "output dropped\n"):format(lost))
  end
  if code ~= 0 then
    local where = "print"
    for _, node in ipairs(self.plan.nodes) do
      if node.kind == "sink" and node.sink == "print" and node.fd == 1 then
        where = node.label
        break
      end
    end
    job_error(("%s: %s"):format(where, out_error_text(1, code)))
  end
end

---Frees the runtime (always, also after a failure).
function Job:close()
  local code = C.weir_out_flush()
  if self.saved_limit then
    memory.set_limit(self.saved_limit[1], self.saved_limit[2])
    self.saved_limit = nil
  end
  if M.current == self then
    M.current = nil
  end
  if self.rt ~= nil then
    C.weir_rt_free(self.rt)
    self.rt = nil
  end
  self:close_files()
  return code
end

---Runs the job to completion. Raises a weir job error on failure.
---@param plan table from weir.plan.build
function M.execute(plan)
  local self = M.new(plan)
  local ok, err = pcall(function()
    self:start()
    self:run_loop()
    self:finish()
  end)
  if not ok and C.weir_mem_alarm() ~= 0 and not (type(err) == "table" and err.memory) then
    -- a failure outside the batches (open(), the end of input) that the memory account explains
    local _, merr = pcall(self.check_memory, self)
    if type(merr) == "table" and merr.memory then
      err = merr
    end
  end
  if not ok and type(err) == "table" and err.memory then
    local cok, cerr = pcall(self.close_functions, self)
    if not cok then
      err.text = err.text .. "\n  then " .. (type(cerr) == "table" and cerr.text or tostring(cerr))
    end
  end
  local code = self:close()
  if not ok then
    error(err, 0)
  end
  self:check_output(code)
end

return M
