-- weir.run: runs a planned job: the Job and its lifecycle (new, start, pump, poll, handle,
-- dispatch, finish, close, execute), operator instantiation with the contexts user functions
-- see, and the sinks' files (metrics and the end-of-job reports are weir.jobreport's). Every
-- operator subtask gets a push function generated for its operator (weir.codegen); records
-- flow as direct calls from the source driver (weir.sources) through the chain
-- (weir.exchange), in one deterministic order. The driver pulls batches from C
-- (weir_loop_poll), inside one xpcall in a worker coroutine (weir.failure), and resumes past
-- a failed record when the job routes errors to a side output. Watermarks, ticks and
-- processing-time timers are weir.timeflow. The Job's methods live in those modules, mixed
-- into one class here, so callers (window operators, status, the REPL) call job:method()
-- whichever module holds it.
local ffi = require("ffi")
local C = require("weir.ffi")
local format = require("weir.format")
local util = require("weir.util")
local windowing = require("weir.windowing")
local status = require("weir.status")
local duration = require("weir.duration")
local memory = require("weir.memory")
local codegen = require("weir.codegen")
local failure = require("weir.failure")
local exchange = require("weir.exchange")
local sources = require("weir.sources")
local timeflow = require("weir.timeflow")
-- loaded by the jobs that use them (weir.lazy)
local lazy = require("weir.lazy")
local json = lazy.require("weir.json")
local keyed = lazy.require("weir.keyed")
local connect = lazy.require("weir.connect")
local interval = lazy.require("weir.interval")
local checkpoint_job = require("weir.checkpoint_job")
local jobreport = require("weir.jobreport")
local alignment = require("weir.alignment")

local M = {}

local event_array_t = ffi.typeof("weir_event_t[?]")
-- resolved now: the first lookup of a C function inside a trace aborts it ("symbol not in
-- cache"); these run per batch (the poll, the memory alarm, the status line's flush, the
-- clock), and these per record in weir.codegen's templates (which get C from their callers)
local _, _, _, _ = C.weir_loop_poll, C.weir_mem_alarm, C.weir_out_flush, C.weir_rt_now
local _, _, _, _, _, _ = C.weir_out_write, C.weir_keygroup_of_number,
  C.weir_keygroup_of_string, C.weir_fields_parse, C.weir_kstate_row, C.weir_kstate_row_put
local BATCH = tonumber(C.WEIR_BATCH_MAX)
local EV_LINE, EV_RANGE, EV_END = tonumber(C.WEIR_EV_LINE), tonumber(C.WEIR_EV_RANGE),
  tonumber(C.WEIR_EV_END)
local EV_TICK, EV_TIMER, EV_STOP = tonumber(C.WEIR_EV_TICK), tonumber(C.WEIR_EV_TIMER),
  tonumber(C.WEIR_EV_STOP)
local EV_STATUS = tonumber(C.WEIR_EV_STATUS)
local EV_RECORDS = tonumber(C.WEIR_EV_RECORDS)
local INF = math.huge
local RESERVE_BYTES = 65536

local job_error, out_error_text = failure.job_error, failure.out_error_text
M.job_error = job_error

-- The job ----------------------------------------------------------------------------------

local Job = {}
Job.__index = Job
Job.generate = codegen.generate
jit.off(true) -- this chunk's loops run once (weir.codegen, "Set-up code")
for _, part in ipairs({ failure, exchange, sources, timeflow, checkpoint_job, jobreport }) do
  for name, f in pairs(part.methods) do
    assert(Job[name] == nil, name)
    Job[name] = f
  end
end

-- What user functions see: open(self, ctx) gets a RuntimeContext, process functions a
-- ProcessContext per subtask.
local RuntimeContext = {}
RuntimeContext.__index = RuntimeContext
function RuntimeContext:subtask_index() return self.index end
function RuntimeContext:parallelism() return self.p end
function RuntimeContext:job_name() return self.name end
function RuntimeContext:max_parallelism() return self.maxp end

local ProcessContext = {}
ProcessContext.__index = ProcessContext
-- ts and key are never nil in the table (NONE stands for nil): a field that keeps its slot is a
-- plain store in a trace, where storing nil into an absent field inserts a key every record.
local NONE = codegen.NONE
function ProcessContext:timestamp()
  local ts = self.ts
  if ts == NONE then return nil end
  return ts
end
function ProcessContext:current_watermark() return self.inst.watermark end
function ProcessContext:current_processing_time() return self.job:now() end
function ProcessContext:current_key()
  local key = self.key
  if key == NONE then return nil end
  return key
end
function ProcessContext:output(t, v)
  if type(t) ~= "table" or not t.id then
    error("ctx:output: expected an output tag", 2)
  end
  if util.is_nil(v) then
    error("ctx:output: cannot emit nil", 2)
  end
  local e = self.node.side[t.id]
  if e then
    e(self.inst.index, v, self:timestamp()) -- not a tail call (weir.codegen, "Tail calls" and
    -- the operators' plain calls: a tail call counts towards a trace's loop unroll limit)
  end
end

function Job:now()
  return self.now_override or C.weir_rt_now(self.rt)
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
    node.ctxs[st] = setmetatable({ inst = inst, node = node, job = self, ts = NONE, key = NONE },
      ProcessContext)
    self.instances[#self.instances + 1] = inst
  end
  self:outputs(node)
  local f, rich = user_call(node)
  local kind, objs, emit = node.kind, node.objs, node.emit
  if kind == "map" then
    node.push = self:generate(node, "map", rich, f, objs, emit, codegen.nil_result("map"),
      util.is_nil)
  elseif kind == "filter" then
    node.push = self:generate(node, "filter", rich, f, objs, emit)
  elseif kind == "flat_map" then
    node.push = self:generate(node, "flat_map", rich, f, objs, emit, util.is_nil)
  elseif kind == "process" then
    node.push = self:generate(node, "process", rich, f, objs, emit, node.ctxs,
      util.is_nil, NONE)
  elseif kind == "timestamps" then
    self:instantiate_timestamps(node)
  elseif kind == "window" then
    self:instantiate_window(node)
  elseif kind == "keyed_process" then
    keyed.instantiate(self, node)
  elseif kind == "rolling" then
    keyed.instantiate_rolling(self, node)
  elseif kind == "co_map" or kind == "co_flat_map" then
    connect.instantiate(self, node)
  elseif kind == "co_process" then
    connect.instantiate_co_process(self, node, keyed)
  elseif kind == "interval_join" then
    interval.instantiate(self, node)
  elseif kind == "sink" then
    self:instantiate_sink(node, f, rich)
  elseif kind == "source" then
    self:instantiate_source(node, f, rich)
  else
    error("weir: no code generator for operator kind " .. tostring(kind))
  end
  if node.push and (kind == "window" or kind == "timestamps") then
    -- their code is not generated from TEMPLATES: record the running operator here (both the
    -- wrapper and push are known to the error handler; a plain call, see weir.codegen)
    local push = node.push
    self.pushes[push] = node
    node.push = self:generate(node, "entry", false, push, self.op_slot, node.id)
  end
  if node.push then
    self.pushes[node.push] = node
  end
end

---A window operator: the one weir.windowing chooses for the node.
function Job:instantiate_window(node)
  -- a window function runs on after it emits: the running operator is the window again
  local slot, id, downstream = self.op_slot, node.id, node.emit
  node.emit = function(st, v, ts, key)
    downstream(st, v, ts, key)
    slot[0] = id
  end
  windowing.instantiate(self, node)
end

---A sink's push function: print, a user function, collect or write_text.
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
    node.push = self:generate(node, "print", false, C, node.json and json.encode or format.value,
      prefixes, node.fd, self.out_count, failed, node.json)
  elseif s == "fn" then
    -- sink(v, ctx), a rich sink's sink(self, v, ctx): a Lua function with fewer parameters
    -- never sees the context (no vararg: debug.getinfo says so)
    local d = type(f) == "function" and debug.getinfo(f, "Su")
    if d and d.what == "Lua" and not d.isvararg and d.nparams < (rich and 3 or 2) then
      node.push = self:generate(node, "sink_fn_noctx", rich, f, node.objs, self.out_count)
    else
      node.push = self:generate(node, "sink_fn", rich, f, node.objs, node.ctxs, self.out_count,
        NONE)
    end
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
    node.push = self:generate(node, "write_text", false, files,
      node.json and json.encode or format.value, self.out_count, failed, node.json)
  elseif s == "kafka" then
    require("weir.kafka").instantiate_sink(self, node)
  end
end

-- The driver -------------------------------------------------------------------------------

function Job:open_functions()
  for _, inst in ipairs(self.instances) do
    local node = inst.node
    local obj = inst.obj
    if obj and type(obj.open) == "function" then
      local rtc = setmetatable({ index = inst.index, p = node.parallelism,
        name = self.plan.job_name, maxp = node.max_parallelism or 128 }, RuntimeContext)
      if node.kind == "keyed_process" or node.kind == "co_process" then
        rtc = keyed.open_context(inst, rtc, self) -- rt:value_state and the other state getters
      end
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
  local committed = self.restore_files and self.restore_files[path]
  if committed then
    return self:reopen_file(node, path, committed) -- a restore (weir.checkpoint_job)
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
  if self.kafka_sinks then -- Kafka sinks: flushed at the end (check), freed at close
    require("weir.kafka").close_sinks(self, check)
  end
  local broken
  for _, f in ipairs(self.files) do
    local ok, err = f.fh:close()
    if not ok and not broken then
      broken = ("%s: cannot write %s: %s"):format(f.node.label, f.path, tostring(err))
    end
  end
  self.files = {}
  if broken and check then
    job_error(broken)
  end
end

-- Delivers event k of a poll (from record sub on, after a routed failure) and returns the
-- next event's index: a run of lines of one source goes to its driver at once.
local function deliver(self, events, n, k, sub)
  local e = events[k]
  local kind = e.kind
  local progress = self.progress
  if kind == EV_LINE then
    local src = e.source
    local j = k + 1
    while j < n and events[j].kind == EV_LINE and events[j].source == src do
      j = j + 1
    end
    self.arrival = e.time_ms
    self.records_in = self.records_in + (j - k)
    self.by_source[src].lines(events, k, j)
    return j
  elseif kind == EV_RECORDS then
    progress[1], progress[2] = k, -1 -- the record: unknown until a failure's handler reads it
    local first = sub or 0
    self.arrival = e.time_ms
    self.records_in = self.records_in + (e.len - first)
    local src = self.by_source[e.source]
    if src.out_sink then -- its sink does not count (weir.exchange)
      local out = self.out_count
      out[1] = out[1] + (e.len - first)
    end
    src.records(e.ptr, first, e.len - 1)
  elseif kind == EV_RANGE then
    progress[1], progress[2] = k, -1 -- (from_elements stores it per record)
    local first = sub or e.index
    self.arrival = e.time_ms
    self.records_in = self.records_in + (e.index + e.len - first)
    local src = self.by_source[e.source]
    if src.out_sink then -- its sink does not count (weir.exchange)
      local out = self.out_count
      out[1] = out[1] + (e.index + e.len - first)
    end
    src.range(first, e.index + e.len - 1)
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
  end
  return k + 1
end

---Delivers events k..n-1 of a poll.
function Job:dispatch(n, k, sub)
  local events = self.events
  if k >= n then
    return
  end
  -- the first two events outside the loop: a poll of one or two events (or runs of lines), the
  -- usual, never enters it (LuaJIT would try to trace a loop that does not loop back)
  k = deliver(self, events, n, k, sub)
  if k < n then
    k = deliver(self, events, n, k, nil)
  end
  while k < n do
    k = deliver(self, events, n, k, nil)
  end
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
  self:sync_wakeup() -- before the next poll, which is where the runtime reads it
  if self.progress_on then
    self:show_progress(false)
  end
end

---One poll: returns the number of events it got (0: nothing will ever come again).
function Job:poll()
  local n = C.weir_loop_poll(self.rt, self.events, self.batch)
  if n < 0 then
    local text = ffi.string(C.weir_rt_error(self.rt))
    local port = text:match("^socket_text_stream [^ ]*:(%d+): connection refused$")
    if port then -- the usual first run of a socket example
      text = ("%s (is a server listening? e.g. nc -lk %s)"):format(text, port)
    end
    job_error(text)
  end
  return n
end

---After each batch: the memory account, the runtime's next wakeup, the progress line.
function Job:batch_done()
  if C.weir_mem_alarm() ~= 0 then
    self:check_memory()
  end
  if self.roundtrip then
    self.roundtrip:after_batch() -- --verify-checkpoints (weir.roundtrip)
  end
  self:sync_wakeup() -- before the next poll, which is where the runtime reads it
  if self.progress_on then
    self:show_progress(false)
  end
  local rebalance = self.rebalance
  if rebalance then
    rebalance() -- --group: the consumer group's events (weir.kafka), at the consistent point
  end
  local ck = self.checkpointer
  if ck then
    ck:after_batch() -- nothing is in flight here: the consistent point (docs/ARCHITECTURE.md)
  end
end

---Polls and dispatches until the sources end, all inside one protected call (run_loop): the
---way from a source driver's loop exit back into it (dispatch's return, batch_done, the next
---poll) is then Lua and FFI calls only, which LuaJIT compiles as one side trace per batch. An
---xpcall per batch made that way return into C, an abort ("return to lower frame") that left
---every batch's end to the interpreter. With n, first finishes the batch of n events from event
---k (and record sub) on, where a routed failure stopped it.
function Job:pump(n, k, sub)
  if n then
    self:dispatch(n, k, sub)
    self:batch_done()
  end
  while self.live > 0 do
    n = self:poll()
    if n == 0 then
      return
    end
    self.polled = n
    self:dispatch(n, 0, nil)
    self:batch_done()
  end
end

function Job:run_loop()
  local n, k, sub
  while true do
    local ok, info = self:protected(self.pump, self, n, k, sub)
    if ok then
      return
    end
    if C.weir_mem_alarm() ~= 0 then
      self:release_reserve(info)
      self:check_memory(info) -- a refused allocation is the job's failure, not the record's
    end
    n = self.polled
    k, sub = self:failed(info)
  end
end

---A job, built but not started.
---@param plan table from weir.plan.build
function M.new(plan)
  return setmetatable({
    plan = plan, factories = {}, instances = {}, pushes = {}, senders = {}, key_sites = {},
    drivers = {},
    firers = {}, places = {}, user_places = {},
    by_source = {}, files = {}, progress = { 0, 0 }, events = event_array_t(BATCH),
    assigners = {}, timer_nodes = {}, check_triggers = plan.env.job.check_triggers,
    rebalance_counters = {}, roundtrip = false, rebalance = false,
    live = #plan.sources, stopped = false, unread_errors = 0, unread_fires = 0, arrival = 0,
    records_in = 0, polled = 0, failure_hooks = {},
    -- weir.timeflow's sweeps (Job:make_sweeps, at start)
    sweep_tick = false, sweep_stalls = false, sweep_fire = false, sweep_read_all = false,
    sweep_min_due = false,
    batch = math.min(BATCH, plan.env.batch_size or BATCH), out_count = { 0 },
    progress_state = {}, op_slot = C.weir_op_slot(), ptimers = timeflow.new_registry(),
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
  plan.env.running_job = self -- env:status() from user code reads the running job
  -- the job's memory limit: --max-memory (set by weir.main) wins over weir.env{max_memory};
  -- setting it again also clears what an earlier job in this process left
  local bytes, text = memory.limit()
  self.saved_limit = { bytes, text }
  if plan.env.max_memory and not plan.env.job.max_memory then
    bytes, text = plan.env.max_memory, "max_memory " .. plan.env.max_memory_text
  end
  memory.set_limit(bytes, text)
  if plan.env.job.group then
    require("weir.kafka").check_group(self) -- --group: one Kafka source
  end
  self.checkpointer = checkpoint_job.prepare(self) -- reads the checkpoint a restore uses
  if self.checkpointer and self.checkpointer.finished then
    return
  end
  -- Instantiating the operators records no trace: LuaJIT's hot counters are shared (hashed by
  -- bytecode address), so a function run once per operator or subtask here could start a trace
  -- now and then, to abort where it reaches jit.off code or a loop. The JIT is on again for the
  -- sources' opening (a replay's parse loop) and the user's open(); Job:close restores it too.
  self.jit_was_on = jit.status()
  jit.off()
  self:derive_out_counts() -- before the sinks' code is made (weir.exchange)
  for i = #plan.nodes, 1, -1 do
    self:instantiate(plan.nodes[i])
  end
  self:make_sweeps()
  if self.jit_was_on then
    jit.on()
  end
  self.jit_was_on = nil
  self:open_sources(opts.clock)
  if self.checkpointer then
    self.checkpointer:attach() -- restores sources, clock and state before open()
  end
  alignment.setup(self) -- watermark alignment: after the restore (nothing paused yet)
  self:open_functions()
  if self.checkpointer then
    self.checkpointer:after_open() -- keyed state goes into the states open() made
  end
  if plan.env.job.verify_checkpoints then
    self.roundtrip = require("weir.roundtrip").new(self)
  end
  self:sync_wakeup() -- a processing-time timer open() made (a keyed operator's restore)
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
  -- The set-up garbage is collected before the first poll. Among it are the file handles that
  -- weir.plan (check_files) and weir.sources (prepare) open on input files: a file's finalizer
  -- runs even when it is closed, and one that runs while LuaJIT records a trace aborts the
  -- trace wherever it is (lj_gc.c, gc_call_finalizer: lj_trace_abort; reported as "error
  -- thrown or hook called during recording": about 5 per run of the abort matrix, at random
  -- places; none with this collection). About 1M instructions, once per job.
  collectgarbage()
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
  -- its window lists made when read
  self.plan.env.final_status, self.plan.env.final_pending = status.final(self)
  self:close_functions()
  if self.rebalance then
    self.rebalance(true) -- --group: the last snapshots, after the output is written
  end
  self:report_drops()
  if self.stopped then
    self:report_stop()
  end
end

---Frees the runtime (always, also after a failure).
function Job:close()
  local code = C.weir_out_flush()
  if self.saved_limit then
    memory.set_limit(self.saved_limit[1], self.saved_limit[2])
    self.saved_limit = nil
  end
  if self.plan.env.running_job == self then
    self.plan.env.running_job = nil
  end
  if self.rt ~= nil then
    C.weir_rt_free(self.rt)
    self.rt = nil
  end
  self:close_files()
  if self.checkpointer then
    self.checkpointer:close()
  end
  if self.jit_was_on then -- a failure while the operators were instantiated (Job:start)
    jit.on()
    self.jit_was_on = nil
  end
  -- The job's traces go with it. A trace keeps the closures and tables it was specialised on
  -- (its IR constants) alive, and a trace of a weir module's function lives as long as the
  -- module: without this a process that runs job after job (the REPL, a script with a loop, the
  -- specs) kept every finished job's graph and state (about 250 KB a job in aggwindow_spec).
  -- The next job compiles its own.
  jit.flush()
  return code
end

---Runs the job to completion. Raises a weir job error on failure; after a memory failure the
---user's close() still runs, and the output is flushed.
---@param plan table from weir.plan.build
function M.execute(plan)
  local self = M.new(plan)
  local ok, err = pcall(function()
    self:start()
    local ck = self.checkpointer
    if ck and ck.finished then
      return
    end
    self:run_loop()
    if ck then
      ck:before_finish() -- a stop by signal: the savepoint, before close()
    end
    self:finish()
    if ck then
      ck:after_finish() -- the end of input: the final checkpoint
    end
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


-- set-up and tear-down code, never traced (weir.codegen, "Set-up code"): what it calls compiles
for _, f in ipairs({ Job.instantiate, Job.instantiate_window, Job.instantiate_sink,
    Job.open_functions, Job.open_file, Job.close_functions, Job.close_files, M.new, Job.start,
    Job.finish, Job.close, Job.run_loop }) do
  jit.off(f) -- run_loop: once per job and per routed failure; pump, its callee, is the loop
end
jit.off(M.execute, true) -- and its protected closure

return M
