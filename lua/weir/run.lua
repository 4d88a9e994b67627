-- weir.run: runs a planned job. Every operator subtask gets a push function generated for its
-- operator (one prototype per operator, so each gets its own JIT traces); records flow as
-- direct calls from the source driver through the chain, in one deterministic order. The
-- driver pulls batches from C (weir_loop_poll), one xpcall per batch, and resumes past a
-- failed record when the job routes errors to a side output.
local ffi = require("ffi")
local bit = require("bit")
local C = require("weir.ffi")
local format = require("weir.format")
local keys = require("weir.keys")
local replay = require("weir.replay")
local util = require("weir.util")
local records = require("weir.records")
local watermarks = require("weir.watermarks")
local windowop = require("weir.windowop")
local aggwindow = require("weir.aggwindow")
local status = require("weir.status")
local duration = require("weir.duration")

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

-- Errors ------------------------------------------------------------------------------------

---A failure that ends the job: main.lua prints "weir: " .. text and exits 1.
local function job_error(text)
  error({ weir_job_error = true, text = text }, 0)
end
M.job_error = job_error

local function record_text(v)
  local ok, s = pcall(format.value, v)
  if not ok then
    s = tostring(v)
  end
  if #s > RECORD_CUT then
    s = s:sub(1, RECORD_CUT) .. "..."
  end
  if type(v) == "string" then
    return ("%q"):format(s):gsub("\\\n", "\\n")
  end
  return s
end

---The user-facing part of a traceback: frames in the user's files, not weir's or C's.
local function user_traceback(tb)
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
  return emit(cur_st, x, cur_ts)
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
  return emit(cur_st, x, cur_ts)
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
local C, fmt, prefixes, fd, out_n = ...
local type = type
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  if type(v) ~= "string" then v = fmt(v) end
  local p = prefixes[st]
  if #p > 0 then C.weir_out_write(fd, p, #p) end
  C.weir_out_write(fd, v, #v)
  C.weir_out_write(fd, "\n", 1)
end]],
  write_text = [[
local files, fmt, out_n = ...
local type = type
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  if type(v) ~= "string" then v = fmt(v) end
  files[st]:write(v, "\n")
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
    factory = assert(load(src, ("=weir op %d %s"):format(node.id, what)))
    self.factories[cache_key] = factory
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
    if aggwindow.applies(self, node) then
      aggwindow.instantiate(self, node)
    else
      windowop.instantiate(self, node)
    end
  elseif kind == "sink" then
    self:instantiate_sink(node, f, rich)
  elseif kind == "source" then
    self:instantiate_source(node, f, rich)
  else
    error("weir: no code generator for operator kind " .. tostring(kind))
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
    node.push = self:generate(node, "print", false, C, format.value, prefixes, node.fd,
      self.out_count)
  elseif s == "fn" then
    node.push = self:generate(node, "sink_fn", rich, f, node.objs, node.ctxs, self.out_count)
  elseif s == "collect" then
    node.push = self:generate(node, "collect", false, node.values, self.out_count)
  elseif s == "write_text" then
    local files = {}
    for st = 0, node.parallelism - 1 do
      files[st] = self:open_file(node, st)
    end
    node.push = self:generate(node, "write_text", false, files, format.value, self.out_count)
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

local function on_valve(d, flags)
  local node = d.node
  if bit.band(flags, 1) ~= 0 then
    local w = C.weir_valve_output(d.valve)
    d.watermark = w
    local hook = node.on_watermark
    if hook then
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
local assign, gens, emitters, emit, bad_ts = ...
local type, MIN = type, -math.huge
return function(st, v, ts, key)
  local t = ts
  if assign then
    t = assign(v, ts)
    if type(t) ~= "number" or t ~= t then bad_ts(t) end
  end
  emit(st, v, t)
  return gens[st]:on_event(v, t or MIN, emitters[st])
end]]
TEMPLATES.timestamps = TIMESTAMPS

local function bad_ts(t)
  error(("the timestamp assigner returned %s, not a number of milliseconds"):format(
    tostring(t)), 0)
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
    node.emitters, node.emit, bad_ts)
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
      local t = C.weir_timers_next(inst.timers, C.WEIR_TIME_PROCESSING)
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
  for _, node in ipairs(self.timer_nodes) do
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
function Job:open_file(node, st)
  local path = node.path
  if node.parallelism > 1 then
    path = node.path .. "/" .. (st + 1)
    if st == 0 then
      local ok = os.execute(("mkdir -p '%s'"):format(node.path:gsub("'", "'\\''")))
      if ok ~= 0 and ok ~= true then
        job_error(("%s: cannot create directory %s"):format(node.label, node.path))
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
  self.files[#self.files + 1] = fh
  return fh
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
  self:close_files()
end

function Job:close_files()
  for _, fh in ipairs(self.files) do
    fh:close()
  end
  self.files = {}
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

---Turns a failure caught by the batch xpcall into a routed error record or a job failure.
---info: msg, traceback, and where found: node, st (subtask), record, key_selector.
function Job:failed(info, fatal)
  if type(info.msg) == "table" and info.msg.weir_job_error then
    error(info.msg, 0)
  end
  local msg = tostring(info.msg)
  local node, st = info.node, info.st
  local progress = self.progress
  local e = self.events[progress[1]]
  local kind = e.kind
  local on_error = self.plan.env.on_error
  if on_error and not fatal and node and st and not info.key_selector
      and (kind == EV_LINE or kind == EV_RANGE or kind == EV_RECORDS) then
    local rec = { value = info.record, error = msg, operator = node.label }
    local side = node.side[on_error.id]
    if side then
      side(st, rec, nil)
    else
      self.unread_errors = self.unread_errors + 1
      C.weir_out_flush()
      io.stderr:write(("weir: %s: %s (record %s; no one reads side output '%s')\n"):format(
        node.label, msg, record_text(info.record), on_error.id))
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
  local where = node and node.label or "weir"
  if info.key_selector then
    where = "key_by (key selector feeding " .. where .. ")"
  elseif node and st then
    where = ("%s, subtask %d/%d"):format(where, st + 1, node.parallelism)
  end
  local text = ("%s: %s"):format(where, msg)
  if info.has_record then
    text = text .. "\n  record: " .. record_text(info.record)
    if kind == EV_RECORDS then
      -- which one: a typed text source counts lines, a generator records from 0
      local src = self.by_source[e.source]
      text = text .. (" (%s %d of %s)"):format(src.source == "nexmark" and "record" or "line",
        e.index + progress[2], src.label)
    end
  end
  local tb = user_traceback(info.traceback)
  if os.getenv("WEIR_DEBUG") then
    tb = info.traceback
  end
  if tb ~= "" then
    text = text .. "\n" .. tb
  end
  job_error(text)
end

---The xpcall handler: runs where the error happened, so it can find the failing operator's
---frame (its push function: locals st, v) and read the record from it. Costs nothing per record.
function Job:error_handler()
  local pushes, senders, drivers, progress = self.pushes, self.senders, self.drivers,
    self.progress
  return function(msg)
    local info = { msg = msg, traceback = debug.traceback(tostring(msg), 2) }
    if type(msg) == "table" and msg.weir_job_error then
      return info
    end
    for level = 2, 200 do
      local d = debug.getinfo(level, "f")
      if not d then
        break
      end
      local f = d.func
      if pushes[f] then
        info.node = pushes[f]
        info.st = select(2, debug.getlocal(level, 1))
        info.record = select(2, debug.getlocal(level, 2))
        info.has_record = true
        break
      elseif senders[f] then
        info.node, info.key_selector, info.has_record = senders[f], true, true
        info.record = select(2, debug.getlocal(level, 2))
        break
      elseif drivers[f] then
        info.node, info.st = drivers[f], 0
        if drivers[f].source == "generate" then
          info.record, info.has_record = progress[2], true
        elseif drivers[f].bad_line then
          -- a malformed line of a typed text source: the message already shows it
          info.record, drivers[f].bad_line = drivers[f].bad_line, nil
        end
        break
      end
    end
    return info
  end
end

---Dispatches the n events of one poll, one xpcall per batch (resuming past routed errors).
function Job:handle(n)
  self.handler = self.handler or self:error_handler()
  local k, sub = 0, nil
  while true do
    local ok, info = xpcall(self.dispatch, self.handler, self, n, k, sub)
    if ok then
      break
    end
    k, sub = self:failed(info)
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
---pending timers and dropped late records, summed over its subtasks, keyed by label.
local STATS = { "open_windows", "elements", "store_bytes", "event_timers", "processing_timers" }

function Job:metrics()
  local m = {}
  for _, node in ipairs(self.timer_nodes) do
    local t = { open_windows = 0, elements = 0, store_bytes = 0, event_timers = 0,
                processing_timers = 0, late_dropped = node.late_dropped or 0 }
    for _, inst in ipairs(node.instances) do
      local ws = status.window_stats(inst)
      for _, what in ipairs(STATS) do
        t[what] = t[what] + ws[what]
      end
    end
    m[node.label] = t
  end
  return m
end

---After the last source: weir's default fires every pending processing-time timer, in time
---order, after the final watermark; end_of_input = "flink" drops them as Flink does.
function Job:end_of_input()
  if self.stopped or self.plan.env.end_of_input == "flink" then
    return
  end
  local ok, info = xpcall(function()
    -- in global time order: everything due at the earliest pending time, then the next
    while true do
      local due = INF
      for _, node in ipairs(self.timer_nodes) do
        for _, inst in ipairs(node.instances) do
          due = math.min(due, C.weir_timers_next(inst.timers, C.WEIR_TIME_PROCESSING))
        end
      end
      if due == INF then
        break
      end
      self:fire_processing_timers(due, true)
    end
  end, self:error_handler())
  if not ok then
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
end

---A job, built but not started.
---@param plan table from weir.plan.build
function M.new(plan)
  return setmetatable({
    plan = plan, factories = {}, instances = {}, pushes = {}, senders = {}, drivers = {},
    by_source = {}, files = {}, progress = { 0, 0 }, events = event_array_t(BATCH),
    assigners = {}, timer_nodes = {}, check_triggers = plan.env.job.check_triggers,
    live = #plan.sources, stopped = false, unread_errors = 0, arrival = 0, records_in = 0,
    batch = math.min(BATCH, plan.env.batch_size or BATCH), out_count = { 0 },
    progress_state = {},
  }, Job)
end

---Instantiates every operator, opens the sources and user functions, and starts the runtime.
---opts.clock ("virtual" or "real") overrides the clock chosen from the sources; opts.repl
---({interactive, history}) opens the REPL's input on the job's runtime.
function Job:start(opts)
  opts = opts or {}
  local plan = self.plan
  M.current = self
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
  if C.weir_rt_start(self.rt) < 0 then
    job_error(ffi.string(C.weir_rt_error(self.rt)))
  end
end

---After the last source (or a stop): end of input, final metrics, close() of user functions.
function Job:finish()
  self:end_of_input()
  if self.progress_on then
    self:show_progress(true)
  end
  self.plan.env.final_metrics = self:metrics()
  self.plan.env.final_status = status.collect(self)
  self:close_functions()
  self:report_drops()
end

---Frees the runtime (always, also after a failure).
function Job:close()
  C.weir_out_flush()
  if M.current == self then
    M.current = nil
  end
  if self.rt ~= nil then
    C.weir_rt_free(self.rt)
    self.rt = nil
  end
  self:close_files()
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
  self:close()
  if not ok then
    error(err, 0)
  end
end

return M
