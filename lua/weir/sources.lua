-- weir.sources: what the job engine knows about each source kind, in one table (KINDS): how it
-- is opened in C (its constructor and any setup before the runtime exists), which driver
-- delivers its events (lines, ranges, typed records), and how a failure names what it was
-- delivering. Owns Job:open_sources (it also creates the runtime: a replay chooses the clock),
-- the driver instantiation, and the source wording of failures (Job:source_place). The builder
-- side of a source kind (its env method, its label) is weir.env and weir.plan.
local ffi = require("ffi")
local C = require("weir.ffi")
local records = require("weir.records")
local duration = require("weir.duration")
local util = require("weir.util")
local codegen = require("weir.codegen")
local failure = require("weir.failure")
-- loaded by the jobs that use them (weir.lazy)
local lazy = require("weir.lazy")
local replay = lazy.require("weir.replay")
local json = lazy.require("weir.json")
local csv = lazy.require("weir.csv")
local kafka = lazy.require("weir.kafka")

local M = {}
local Job = {}
M.methods = Job

local job_error = failure.job_error
local EV_LINE, EV_RANGE, EV_END = tonumber(C.WEIR_EV_LINE), tonumber(C.WEIR_EV_RANGE),
  tonumber(C.WEIR_EV_END)
local EV_TICK, EV_TIMER = tonumber(C.WEIR_EV_TICK), tonumber(C.WEIR_EV_TIMER)
local EV_RECORDS = tonumber(C.WEIR_EV_RECORDS)
local RECORD_CUT = failure.RECORD_CUT

local function check_id(job, id, what)
  if id < 0 then
    job_error(("%s: %s"):format(what, ffi.string(C.weir_rt_error(job.rt))))
  end
  return id
end

---The error of a line that does not parse: line number, what is wrong and the line (cut).
local function line_error(node, e, what)
  local line = ffi.string(e.ptr, e.len)
  local shown = line
  if #shown > RECORD_CUT then
    shown = shown:sub(1, RECORD_CUT) .. "..."
  end
  node.bad_line = line -- for the error handler: the record that failed
  local where = node.source == "kafka" and kafka.where(node, e) or ("line %d"):format(e.index)
  error(("%s: %s: %s"):format(where, what,
    (("%q"):format(shown):gsub("\\\n", "\\n"))), 0)
end

-- The driver of an untyped text source: one Lua string per line; with format json or csv one
-- Lua value per line (weir.json, weir.csv).
local function text_driver(job, node)
  if node.format then
    local decode = node.format == "json" and json.decoder()
      or csv.decoder(node.separator, node.header)
    node.lines = job:generate(node, "decoded_lines", false, decode, node.emit, job.progress,
      function(e, why) line_error(node, e, why) end)
    return node.lines
  end
  node.lines = job:generate(node, "lines", false, ffi.string, node.emit, job.progress)
  return node.lines
end

-- Per source kind (node.source):
--   open(job, node, prepared)  the C source; returns its id or a negative code (then the job
--                              fails with the runtime's error, named by the source's label)
--   prepare(node)              before the runtime exists: returns what open needs and, for a
--                              replay, the start of its virtual clock
--   driver(job, node, f, rich) makes the node's driver (node.range or node.lines): untyped only
--   parse_fields               a typed source whose lines C parses (weir_source_parse_fields)
--   records_only               a typed source that only delivers C records (no text lines)
--   unit                       what one typed record is called in messages ("line" default)
--   element(src, i)            a range source's record i: its wording and its value
--   driver_record(progress)    the record a failing driver was at (its own user function)
--   name(node)                 the name the runtime reports the source by
local KINDS = {}

KINDS.elements = {
  open = function(job, node) return C.weir_source_generate(job.rt, node.count, 0) end,
  driver = function(job, node)
    node.range = job:generate(node, "elements", false, node.values, node.emit, job.progress)
    return node.range
  end,
  element = function(src, i) return ("element %d"):format(i + 1), src.values[i + 1] end,
}

KINDS.generate = {
  open = function(job, node) return C.weir_source_generate(job.rt, node.count, node.rate) end,
  driver = function(job, node, f, rich)
    node.range = job:generate(node, "generate", rich, f, node.objs, node.emit, job.progress,
      codegen.nil_result("generate"), util.is_nil)
    return node.range
  end,
  element = function(_, i) return ("record %d"):format(i), i end,
  driver_record = function(progress) return progress[2] end,
}

KINDS.file = {
  open = function(job, node)
    return C.weir_source_file(job.rt, node.path, node.delimiter, node.max_line_bytes or 0)
  end,
  driver = text_driver,
  parse_fields = true,
}

KINDS.stdin = {
  open = function(job, node)
    return C.weir_source_stdin(job.rt, node.delimiter, node.max_line_bytes or 0)
  end,
  driver = text_driver,
  parse_fields = true,
}

KINDS.socket = {
  open = function(job, node)
    return C.weir_source_socket(job.rt, node.host, node.port, node.delimiter, node.max_retry,
      node.max_line_bytes or 0)
  end,
  driver = text_driver,
}

KINDS.manual = {
  open = function(job) return C.weir_source_manual(job.rt) end,
  driver = text_driver,
}

KINDS.nexmark = {
  open = function(job, node)
    local cfg = ffi.new("weir_nexmark_config_t", node.config)
    cfg.base_time_ms = node.config.base_time
    return C.weir_source_nexmark(job.rt, node.count, cfg, ffi.sizeof(node.record))
  end,
  records_only = true,
  unit = "record",
}

KINDS.replay = {
  prepare = function(node)
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
    return { text = text, entries = entries }, first
  end,
  open = function(job, node, r)
    local what = node.label
    local id = check_id(job, C.weir_source_replay(job.rt, r.text, #r.text), what)
    for _, e in ipairs(r.entries) do
      check_id(job, C.weir_replay_add(job.rt, id, e[1], e[2], e[3], e[4]), what)
    end
    return id
  end,
  driver = text_driver,
  name = function(node)
    return node.replaced and ("%s (replaces %s)"):format(node.path, node.replaced) or node.path
  end,
}

---The error for a line of a typed text source that does not parse (code: weir_fields_parse's
---result): line number, field (number and name) and the line itself; for JSON and CSV the
---layout's message. A CSV header line is no error: it returns. Not per record: only a failing
---line gets here.
local function malformed_line(node, layout, e, code)
  local info = records.info(node.record)
  local reason, n = code % 256, math.floor(code / 256)
  if reason == tonumber(C.WEIR_FIELDS_HEADER) then
    return
  elseif reason == tonumber(C.WEIR_FIELDS_FORMAT) then
    return line_error(node, e, ffi.string(C.weir_fields_error(layout)))
  end
  local what
  if reason == tonumber(C.WEIR_FIELDS_COUNT) then
    if n == tonumber(C.WEIR_FIELDS_N_MAX) then -- saturated: count the separators here
      local line, sep = ffi.string(e.ptr, e.len), node.separator:byte()
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
    elseif reason == tonumber(C.WEIR_FIELDS_STRING) then
      what = what .. ("is longer than %d bytes or holds a NUL"):format(info.bounds[n])
    elseif t == "bool" then
      what = what .. "is not true, false, 1 or 0"
    elseif t == "float" or t == "double" then
      what = what .. "is not a number"
    else
      what = what .. "is not an integer"
    end
  end
  return line_error(node, e, what)
end

-- Kafka (weir.kafka): its driver parses typed records itself, with the wording above. Made on
-- first use, so a job without Kafka does not load weir.kafka.
setmetatable(KINDS, { __index = function(t, name)
  if name == "kafka" then
    local kind = kafka.kind({ line_error = line_error, malformed_line = malformed_line })
    if kind.open then jit.off(kind.open) end
    if kind.driver then jit.off(kind.driver) end
    rawset(t, name, kind)
    return kind
  end
end })

---The drivers of a typed source (node.record): C records, and lines parsed here.
function Job:instantiate_record_source(node)
  local progress, ct = self.progress, node.record
  node.records = self:generate(node, "records", false, ffi.cast, ffi.typeof("const $ *", ct), ct,
    node.emit, progress, ffi.new)
  self.drivers[node.records] = node
  if not KINDS[node.source].records_only then
    local layout = records.layout(ct, node.separator, node.format, node.header)
    node.layout = layout
    node.lines = self:generate(node, "record_lines", false, C, ct, layout, node.emit, progress,
      function(e, code) malformed_line(node, layout, e, code) end, ffi.new)
    self.drivers[node.lines] = node
  end
end

---A source node's drivers: what dispatch calls with its events (f, rich: its user function).
function Job:instantiate_source(node, f, rich)
  if node.record and not KINDS[node.source].typed_driver then
    return self:instantiate_record_source(node)
  end
  self.drivers[KINDS[node.source].driver(self, node, f, rich)] = node
end

---Creates the runtime and opens every source in it. The clock is virtual when a replay is
---among the sources (from the earliest replay time), else real; clock ("virtual" or "real")
---overrides that.
function Job:open_sources(clock)
  local virtual, start = false, nil
  local prepared = {}
  for _, node in ipairs(self.plan.sources) do
    local prepare = KINDS[node.source].prepare
    if prepare then
      local p, first = prepare(node)
      prepared[node] = p
      virtual = true
      start = start and math.min(start, first) or first
    end
  end
  if clock then
    virtual = clock == "virtual"
  end
  self.virtual_clock = virtual -- a checkpoint due on it waits for the writer (weir.checkpoint_job)
  self.rt = C.weir_rt_new(virtual and C.WEIR_CLOCK_VIRTUAL or C.WEIR_CLOCK_REAL, start or 0)
  if self.rt == nil then -- the replay parser keeps start in range; libuv may still fail
    job_error(("cannot start the runtime (%s clock from %s ms)"):format(
      virtual and "virtual" or "real", duration.show(start or 0)))
  end
  for _, node in ipairs(self.plan.sources) do
    local kind, what = KINDS[node.source], node.label
    local id = check_id(self, kind.open(self, node, prepared[node]), what)
    node.src_id = id
    if node.layout and kind.parse_fields then
      check_id(self, C.weir_source_parse_fields(self.rt, id, node.layout), what)
    end
    if kind.name then
      C.weir_source_set_name(self.rt, id, kind.name(node))
    end
    self.by_source[id] = node
  end
end

---What one typed record of a source is called in messages: "line" or "record".
local function unit(src)
  return KINDS[src.source].unit or "line"
end

---For a failure's text: which typed record of event e failed, "(line 5 of read_text_file x)".
function Job:record_number(e)
  local src = self.by_source[e.source]
  if self.progress[2] < 0 then -- not read from the driver's frame (see Job:source_place)
    return ("(%ss %d to %d of %s)"):format(unit(src), e.index, e.index + e.len - 1, src.label)
  end
  return ("(%s %d of %s)"):format(unit(src), e.index + self.progress[2], src.label)
end

---For the error handler: the record a failing driver was at, when the failure is its own (a
---generate function's, or a malformed line of a typed text source). Returns the record and
---"record" (the record is known) or "routed" (the message shows it), or nothing.
function Job:driver_record(node)
  local kind = KINDS[node.source]
  if kind.driver_record then
    return kind.driver_record(self.progress), "record"
  elseif node.bad_line then
    local line = node.bad_line
    node.bad_line = nil
    return line, "routed"
  end
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
  elseif src and kind == EV_RANGE and progress[2] < 0 then
    -- a generator keeps its record's index in its loop (no handler ran to read it): the batch
    return ("while weir delivered records %d to %d of %s"):format(e.index,
      e.index + e.len - 1, src.label), false
  elseif src and kind == EV_RANGE then
    local element = KINDS[src.source].element or KINDS.generate.element
    local what, record = element(src, progress[2])
    return ("while weir delivered %s of %s"):format(what, src.label), true, record
  elseif src and kind == EV_RECORDS and progress[2] < 0 then
    return ("while weir delivered %ss %d to %d of %s"):format(unit(src), e.index,
      e.index + e.len - 1, src.label), false
  elseif src and kind == EV_RECORDS then
    return ("while weir delivered %s %d of %s"):format(unit(src), e.index + progress[2],
      src.label), false
  elseif src and kind == EV_END then
    return "at the end of " .. src.label, false
  elseif kind == EV_TICK then
    return "during a periodic watermark tick", false
  elseif kind == EV_TIMER then
    return "while processing-time timers fired", false
  end
  return "while weir ran the job", false
end


-- set-up code, never traced (weir.codegen, "Set-up code"); the drivers it makes are
jit.off(true) -- this chunk too: its loops run once
for _, f in ipairs({ Job.instantiate_record_source, Job.instantiate_source, Job.open_sources,
    text_driver }) do
  jit.off(f)
end
for _, kind in pairs(KINDS) do
  if kind.open then jit.off(kind.open) end
  if kind.driver then jit.off(kind.driver) end
end

return M
