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

local M = {}

local event_array_t = ffi.typeof("weir_event_t[?]")
local BATCH = tonumber(C.WEIR_BATCH_MAX)
local EV_LINE, EV_RANGE, EV_END = tonumber(C.WEIR_EV_LINE), tonumber(C.WEIR_EV_RANGE),
  tonumber(C.WEIR_EV_END)
local EV_TICK, EV_TIMER, EV_STOP = tonumber(C.WEIR_EV_TICK), tonumber(C.WEIR_EV_TIMER),
  tonumber(C.WEIR_EV_STOP)
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

local TEMPLATES = {
  map = [[
local f, obj, emit, fail_nil = ...
return function(v, ts, key)
  local r = CALL(v)
  if r == nil then return fail_nil(v) end
  return emit(r, ts)
end]],
  filter = [[
local f, obj, emit = ...
return function(v, ts, key)
  if CALL(v) then return emit(v, ts) end
end]],
  flat_map = [[
local f, obj, emit = ...
local cur_ts
local function out(x)
  if x == nil then error("out(nil): records cannot be nil", 2) end
  return emit(x, cur_ts)
end
return function(v, ts, key)
  cur_ts = ts
  CALL(v, out)
end]],
  process = [[
local f, obj, emit, ctx = ...
local function out(x)
  if x == nil then error("out(nil): records cannot be nil", 2) end
  return emit(x, ctx.ts)
end
return function(v, ts, key)
  ctx.ts = ts
  ctx.key = key
  CALL(v, ctx, out)
end]],
  sink_fn = [[
local f, obj, ctx = ...
return function(v, ts, key)
  ctx.ts = ts
  ctx.key = key
  CALL(v, ctx)
end]],
  print = [[
local C, fmt, prefix, fd = ...
local plen, type = #prefix, type
return function(v, ts, key)
  if type(v) ~= "string" then v = fmt(v) end
  if plen > 0 then C.weir_out_write(fd, prefix, plen) end
  C.weir_out_write(fd, v, #v)
  C.weir_out_write(fd, "\n", 1)
end]],
  write_text = [[
local fh, fmt = ...
local type = type
return function(v, ts, key)
  if type(v) ~= "string" then v = fmt(v) end
  fh:write(v, "\n")
end]],
  collect = [[
local values = ...
return function(v, ts, key)
  values[#values + 1] = v
end]],
  rebalance = [[
local targets, n = ...
local c = n - 1
return function(v, ts, key)
  c = c + 1
  if c == n then c = 0 end
  return targets[c + 1](v, ts)
end]],
  hash = [[
local targets, keyf, maxp, p, C, slow_hash = ...
local type = type
return function(v, ts)
  local k = keyf(v)
  local tk, h = type(k)
  if tk == "string" then
    h = C.weir_keygroup_hash_string(k, #k)
  elseif tk == "number" then
    h = C.weir_keygroup_hash_number(k)
  else
    h = slow_hash(k)
  end
  return targets[C.weir_keygroup_subtask(C.weir_keygroup_of(h, maxp), maxp, p) + 1](v, ts, k)
end]],
  lines = [[
local ffi_string, emit, progress = ...
return function(events, i, j)
  for k = i, j - 1 do
    progress[1] = k
    local e = events[k]
    emit(ffi_string(e.ptr, e.len), nil)
  end
end]],
  elements = [[
local values, emit, progress = ...
return function(first, last)
  for i = first, last do
    progress[2] = i
    emit(values[i + 1], nil)
  end
end]],
  generate = [[
local f, obj, emit, progress, fail_nil = ...
return function(first, last)
  for i = first, last do
    progress[2] = i
    local v = CALL(i)
    if v == nil then fail_nil(i) end
    emit(v, nil)
  end
end]],
}

local function fanout_source(n)
  local names = {}
  for i = 1, n do
    names[i] = "e" .. i
  end
  local args = table.concat(names, ", ")
  local body = {}
  for i = 1, n - 1 do
    body[i] = ("  %s(v, ts, key)"):format(names[i])
  end
  body[n] = ("  return %s(v, ts, key)"):format(names[n])
  return ("local %s = ...\nreturn function(v, ts, key)\n%s\nend"):format(args,
    table.concat(body, "\n"))
end

-- Per-job state -----------------------------------------------------------------------------

local Job = {}
Job.__index = Job

---Compiles (once per operator and template) the chunk for one generated function.
function Job:factory(node, what, rich)
  local cache_key = node.id .. ":" .. what .. (rich and ":rich" or "")
  local f = self.factories[cache_key]
  if f then
    return f
  end
  local src = TEMPLATES[what]
  if what:sub(1, 7) == "fanout:" then
    src = fanout_source(tonumber(what:sub(8)))
  end
  if rich then
    src = src:gsub("CALL%(", "f(obj, ")
  else
    src = src:gsub("CALL%(", "f(")
  end
  local chunkname = ("=weir op %d %s"):format(node.id, what)
  f = assert(load(src, chunkname))
  self.factories[cache_key] = f
  local record = what ~= "lines" and what ~= "elements" and what ~= "generate"
    and what:sub(1, 7) ~= "fanout:"
  self.chunks[chunkname] = { node = node, what = what, record = record }
  return f
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
  if t == nil or type(t) ~= "table" or not t.id then
    error("ctx:output: expected an output tag", 2)
  end
  if v == nil then
    error("ctx:output: cannot emit nil", 2)
  end
  local e = self.inst.side[t.id]
  if e then
    return e(v, self.ts)
  end
end

function Job:now()
  return C.weir_rt_now(self.rt)
end

local function nil_result(what)
  return function()
    error(what .. " returned nil (records cannot be nil; use filter or flat_map to drop)", 0)
  end
end

---The function that sends a subtask's output to one consumer edge.
function Job:sender(consumer, i)
  local d = consumer.node
  local port = d.inputs[consumer.port]
  if port.mode == "forward" then
    return d.instances[i + 1].push
  end
  local targets = {}
  for j, inst in ipairs(d.instances) do
    targets[j] = inst.push
  end
  if port.mode == "rebalance" then
    return self:factory(d, "rebalance")(targets, #targets)
  end
  local function slow_hash(k)
    local h, why = keys.java_hash(k)
    if not h then
      keys.bad_key(k, why)
    end
    return h
  end
  return self:factory(d, "hash")(targets, port.key_fn, d.max_parallelism, d.parallelism, C,
    slow_hash)
end

local function noop() end

---Combines the senders of several consumers (in declaration order) into one function.
function Job:combine(node, senders)
  if #senders == 0 then
    return noop
  elseif #senders == 1 then
    return senders[1]
  end
  return self:factory(node, "fanout:" .. #senders)(unpack(senders))
end

function Job:outputs(node, inst)
  local main, side, wm = {}, {}, {}
  for _, c in ipairs(node.consumers) do
    local s = self:sender(c, inst.index)
    if c.tag then
      local list = side[c.tag.id] or {}
      side[c.tag.id] = list
      list[#list + 1] = s
    else
      main[#main + 1] = s
    end
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
  inst.emit = self:combine(node, main)
  inst.side = {}
  for id, list in pairs(side) do
    inst.side[id] = self:combine(node, list)
  end
  inst.wm_targets = wm
end

local function user_call(node)
  local rich = node.rich
  local f = node.fn
  if rich then
    f = node.fn[node.method] or node.fn[node.alias]
  end
  return f, rich
end

---Creates the subtask instances of one node (after those of all its consumers).
function Job:instantiate(node)
  node.instances = {}
  for i = 0, node.parallelism - 1 do
    local inst = { node = node, index = i, watermark = -INF, job = self }
    node.instances[i + 1] = inst
    self:outputs(node, inst)
    if node.kind ~= "source" then
      inst.valve = ffi.gc(C.weir_valve_new(node.channels), C.weir_valve_free)
    end
    if node.rich then
      inst.obj = util.copy(node.fn)
    end
    self:generate(node, inst)
    self.instances[#self.instances + 1] = inst
    self.by_push[inst.push] = inst
  end
end

function Job:generate(node, inst)
  local kind = node.kind
  local f, rich = user_call(node)
  local obj = inst.obj
  if kind == "map" then
    inst.push = self:factory(node, "map", rich)(f, obj, inst.emit, nil_result("map"))
  elseif kind == "filter" then
    inst.push = self:factory(node, "filter", rich)(f, obj, inst.emit)
  elseif kind == "flat_map" then
    inst.push = self:factory(node, "flat_map", rich)(f, obj, inst.emit)
  elseif kind == "process" then
    inst.ctx = setmetatable({ inst = inst, job = self }, ProcessContext)
    inst.push = self:factory(node, "process", rich)(f, obj, inst.emit, inst.ctx)
  elseif kind == "sink" then
    self:generate_sink(node, inst, f, rich, obj)
  elseif kind == "source" then
    self:generate_source(node, inst, f, rich, obj)
  else
    error("weir: no code generator for operator kind " .. tostring(kind))
  end
end

function Job:generate_sink(node, inst, f, rich, obj)
  local s = node.sink
  if s == "print" then
    local prefix = format.prefix(node.print_id, inst.index, node.parallelism)
    inst.push = self:factory(node, "print")(C, format.value, prefix, node.fd)
  elseif s == "fn" then
    inst.ctx = setmetatable({ inst = inst, job = self }, ProcessContext)
    inst.push = self:factory(node, "sink_fn", rich)(f, obj, inst.ctx)
  elseif s == "collect" then
    inst.push = self:factory(node, "collect")(node.values)
  elseif s == "write_text" then
    local path = node.path
    if node.parallelism > 1 then
      path = node.path .. "/" .. (inst.index + 1)
    end
    inst.path = path
    self:open_file(inst)
  end
end

function Job:generate_source(node, inst, f, rich, obj)
  local progress = self.progress
  local s = node.source
  if s == "elements" then
    inst.range = self:factory(node, "elements")(node.values, inst.emit, progress)
  elseif s == "generate" then
    inst.range = self:factory(node, "generate", rich)(f, obj, inst.emit, progress,
      nil_result("generate"))
  else
    inst.lines = self:factory(node, "lines")(ffi.string, inst.emit, progress)
  end
  inst.push = inst.range or inst.lines
end

-- Watermarks --------------------------------------------------------------------------------

local function forward_watermark(inst, w)
  local targets = inst.wm_targets
  for i = 1, #targets do
    local t = targets[i]
    local d = t[1]
    local flags = C.weir_valve_watermark(d.valve, t[2], w)
    if bit.band(flags, 1) ~= 0 then
      d.watermark = C.weir_valve_output(d.valve)
      forward_watermark(d, d.watermark)
    end
  end
end

-- Sources -----------------------------------------------------------------------------------

local function check_id(self, id, what)
  if id < 0 then
    job_error(("%s: %s"):format(what, ffi.string(C.weir_rt_error(self.rt))))
  end
  return id
end

function Job:open_sources()
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
    elseif s == "replay" then
      local r = replays[node]
      id = check_id(self, C.weir_source_replay(rt, r.text, #r.text), what)
      for _, e in ipairs(r.entries) do
        check_id(self, C.weir_replay_add(rt, id, e[1], e[2], e[3], e[4]), what)
      end
    end
    id = check_id(self, id, what)
    node.src_id = id
    self.by_source[id] = node.instances[1]
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

function Job:open_file(inst)
  local node = inst.node
  if node.parallelism > 1 and inst.index == 0 then
    local ok = os.execute(("mkdir -p '%s'"):format(node.path:gsub("'", "'\\''")))
    if ok ~= 0 and ok ~= true then
      job_error(("%s: cannot create directory %s"):format(node.label, node.path))
    end
  end
  if not node.overwrite then
    local fh = io.open(inst.path, "rb")
    if fh then
      fh:close()
      job_error(("%s: %s already exists (use write_text(path, {overwrite = true}))")
        :format(node.label, inst.path))
    end
  end
  local fh, err = io.open(inst.path, "wb")
  if not fh then
    job_error(("%s: cannot write %s"):format(node.label, tostring(err)))
  end
  inst.file = fh
  inst.push = self:factory(node, "write_text")(fh, format.value)
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
    if inst.file then
      inst.file:close()
      inst.file = nil
    end
  end
end

function Job:source_ended(src, flags)
  self.live = self.live - 1
  if flags == END_EXHAUSTED and not self.stopped then
    local inst = self.by_source[src]
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
      by_source[src].lines(events, k, j)
      k = j
    elseif kind == EV_RANGE then
      progress[1] = k
      local first = sub or e.index
      sub = nil
      by_source[e.source].range(first, e.index + e.len - 1)
      k = k + 1
    else
      progress[1] = k
      if kind == EV_END then
        self:source_ended(e.source, e.flags)
      elseif kind == EV_STOP then
        self.stopped = true
      elseif kind == EV_TICK or kind == EV_TIMER then -- luacheck: ignore 542
        -- periodic watermarks and processing-time timers arrive with the event-time issues
      end
      k = k + 1
    end
  end
end

---Turns a failure caught by the batch xpcall into a routed error record or a job failure.
function Job:failed(info)
  local op, inst = info.op, info.inst
  local msg = tostring(info.msg)
  if type(info.msg) == "table" and info.msg.weir_job_error then
    error(info.msg, 0)
  end
  local e = self.events[self.progress[1]]
  local kind = e.kind
  if op and (kind == EV_LINE or kind == EV_RANGE) and self.plan.env.on_error and inst then
    local t = self.plan.env.on_error
    local rec = { value = info.record, error = msg, operator = op.node.label }
    local side = inst.side[t.id]
    if side then
      side(rec, nil)
    else
      self.unread_errors = self.unread_errors + 1
      C.weir_out_flush()
      io.stderr:write(("weir: %s: %s (record %s; no one reads side output '%s')\n"):format(
        op.node.label, msg, record_text(info.record), t.id))
    end
    if kind == EV_LINE then
      return self.progress[1] + 1, nil
    end
    local last = e.index + e.len - 1
    if self.progress[2] < last then
      return self.progress[1], self.progress[2] + 1
    end
    return self.progress[1] + 1, nil
  end
  local where = op and op.node.label or "weir"
  if op and op.what == "hash" then
    where = "key_by (key selector feeding " .. where .. ")"
  elseif inst then
    where = ("%s, subtask %d/%d"):format(where, inst.index + 1, inst.node.parallelism)
  end
  local text = ("%s: %s"):format(where, msg)
  if op and op.record then
    text = text .. "\n  record: " .. record_text(info.record)
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

function Job:run_loop()
  local events = self.events
  local dispatch = self.dispatch
  local chunks, by_push = self.chunks, self.by_push
  local function handler(msg)
    local info = { msg = msg, traceback = debug.traceback(tostring(msg), 2) }
    if type(msg) == "table" and msg.weir_job_error then
      return info
    end
    for level = 2, 200 do
      local d = debug.getinfo(level, "Sf")
      if not d then
        break
      end
      local ci = chunks[d.source]
      if ci and ci.record then
        info.op = ci
        local _, v = debug.getlocal(level, 1)
        info.record = v
        info.inst = by_push[d.func]
        break
      elseif ci and not info.op then
        info.op = ci
        info.inst = ci.node.instances and ci.node.instances[1]
      end
    end
    return info
  end
  while self.live > 0 do
    local n = C.weir_loop_poll(self.rt, events, BATCH)
    if n < 0 then
      job_error(ffi.string(C.weir_rt_error(self.rt)))
    elseif n == 0 then
      break
    end
    local k, sub = 0, nil
    while true do
      local ok, info = xpcall(dispatch, handler, self, n, k, sub)
      if ok then
        break
      end
      k, sub = self:failed(info)
    end
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
  if self.unread_errors > 0 then
    io.stderr:write(("weir: %d failed record(s) went to an error side output no one reads\n")
      :format(self.unread_errors))
  end
end

---Runs the job to completion. Raises a weir job error on failure.
---@param plan table from weir.plan.build
function M.execute(plan)
  local self = setmetatable({
    plan = plan, factories = {}, chunks = {}, instances = {}, by_push = {}, by_source = {},
    progress = { 0, 0 }, events = event_array_t(BATCH), live = #plan.sources,
    stopped = false, unread_errors = 0,
  }, Job)
  local ok, err = pcall(function()
    for i = #plan.nodes, 1, -1 do
      self:instantiate(plan.nodes[i])
    end
    self:open_sources()
    self:open_functions()
    if C.weir_rt_start(self.rt) < 0 then
      job_error(ffi.string(C.weir_rt_error(self.rt)))
    end
    self:run_loop()
    self:close_functions()
    self:report_drops()
  end)
  C.weir_out_flush()
  if self.rt ~= nil then
    C.weir_rt_free(self.rt)
    self.rt = nil
  end
  if not ok then
    for _, inst in ipairs(self.instances) do
      if inst.file then
        inst.file:close()
      end
    end
    error(err, 0)
  end
end

return M
