-- weir.checkpoint_job: the life of a running job's checkpoints (weir run --checkpoint-dir).
-- Gives the plan's nodes their uids, chooses what a start restores (DIR's newest valid
-- checkpoint, --restore PATH, or --fresh) and writes a fresh start's first checkpoint, reopens
-- write_text files at their committed length, checks a checkpoint against the job (operators
-- by uid, kind, a keyed operator's max parallelism, write_text's shape; state the job no
-- longer has) before handing its sections to the parts (keyed state once open() has run:
-- Ck:after_open), and takes checkpoints between batches (the consistent point: nothing is in
-- flight), a savepoint at a stop by signal and a final checkpoint at the end of input.
-- What each part of the job keeps is weir.checkpoint_parts' (window state: weir.windowing's
-- parts, written by weir.winckpt).
local ffi = require("ffi")
local C = require("weir.ffi")
local lazy = require("weir.lazy") -- a job without checkpoints loads none of them
local checkpoint = lazy.require("weir.checkpoint")
local duration = require("weir.duration")
local failure = require("weir.failure")
local inputlog = lazy.require("weir.inputlog")
local parts = lazy.require("weir.checkpoint_parts")

local M = {}
local Job = {}
M.methods = Job

local job_error = failure.job_error
local DEFAULT_INTERVAL_MS = 10000
local KEPT = 3
local TOLERABLE_FAILURES = 3 -- consecutive failed checkpoints before the job fails
local INF = math.huge
local UV_EAGAIN = -11 -- weir_ckpt_lock's "held by another writer" (-EAGAIN on Linux)

local function say(...) return parts.say(...) end

local function usage(fmt, ...)
  error({ usage = true, msg = fmt:format(...) }, 0)
end

---Gives every node of the plan its uid: its own (ds:uid) or kind-n, counting the nodes of its
---kind in declaration order ("map-2", "source-file-1", "sink-write_text-1"). Two equal uids
---are a build error naming both operators.
function M.assign_uids(plan)
  local counts, seen = {}, {}
  for _, node in ipairs(plan.nodes) do
    local kind = node.kind
    if kind == "source" then
      kind = "source-" .. node.source
    elseif kind == "sink" then
      kind = "sink-" .. node.sink
    end
    counts[kind] = (counts[kind] or 0) + 1
    local uid = node.uid or (kind .. "-" .. counts[kind])
    if seen[uid] then
      usage("uid %q is used by two operators: %s and %s", uid, seen[uid].label, node.label)
    end
    seen[uid] = node
    node.ckpt_uid = uid
  end
end

-- Choosing the checkpoint ------------------------------------------------------------------

local Ck = {}
Ck.__index = Ck

---Before the job is instantiated: the checkpointer of a job run with --checkpoint-dir or
-----restore (nil without), holding the checkpoint to restore, if any. With .finished the job
---already ended by end of input and must not run again.
function M.prepare(job)
  local o = job.plan.env.job
  local given = job.restore_from -- in memory: the REPL's :undo and :restore (weir.repl_undo)
  if not (o.checkpoint_dir or o.restore or given) then
    return nil
  end
  local self = setmetatable({ job = job, dir = o.checkpoint_dir, opts = o, failures = 0,
                              interval_ms = DEFAULT_INTERVAL_MS, taken = 0, gc_ceiling_kb = false,
                              stats = M.new_stats() }, Ck)
  if o.checkpoint_interval then
    if o.checkpoint_interval == "0" then
      self.interval_ms = 0
    else
      local ok, ms = pcall(duration.parse, o.checkpoint_interval, "--checkpoint-interval")
      if not ok or ms < 0 then
        usage("--checkpoint-interval: invalid duration %q", o.checkpoint_interval)
      end
      self.interval_ms = ms
    end
  end
  M.assign_uids(job.plan)
  if self.dir then
    local rc = C.weir_out_mkdirs(self.dir)
    if rc ~= 0 then
      usage("--checkpoint-dir %s: %s", self.dir, ffi.string(C.weir_strerror(rc)))
    end
    local fd = C.weir_ckpt_lock(self.dir)
    if fd < 0 then
      usage("--checkpoint-dir %s: %s", self.dir, fd == UV_EAGAIN
        and "another weir is using it (its LOCK is held)"
        or ffi.string(C.weir_strerror(fd)))
    end
    self.lock_fd = fd
    for _, e in ipairs(checkpoint.list(self.dir) or {}) do
      if e.tmp then
        C.weir_ckpt_remove(e.path) -- left by a crash while a checkpoint was written
      end
    end
    self.next_id = checkpoint.next_id(self.dir)
  end
  inputlog.prepare(self)
  local from
  local read_t0 = C.weir_ckpt_clock_ms()
  if given then
    from = given
  elseif o.restore then
    local man, sections = checkpoint.read(o.restore)
    if not man then
      job_error(("--restore %s: not a valid checkpoint: %s"):format(o.restore, sections))
    end
    if man.repl_manual then
      usage("--restore %s: a REPL savepoint of records typed at the prompt (%s), which no file "
        .. "holds: weir run cannot go on from it; weir repl %s --manual and :restore %s can",
        o.restore, man.repl_manual, o.script or "JOB.lua", o.restore)
    end
    from = { path = o.restore, name = o.restore:match("([^/]+)/*$"), manifest = man,
             sections = sections }
  elseif not o.fresh then
    local bad
    from, bad = checkpoint.newest(self.dir)
    for i, b in ipairs(bad) do
      local after = (from and i == #bad) and ("; restoring " .. from.name)
        or (bad[i + 1] and ("; trying " .. bad[i + 1].name) or "")
      say("%s is corrupt (%s)%s", b.name, b.why, after)
    end
    if not from and #bad > 0 then
      job_error(("no valid checkpoint in %s (%d corrupt); --fresh starts the job over")
        :format(self.dir, #bad))
    end
  end
  self.read_ms = C.weir_ckpt_clock_ms() - read_t0
  if not from and self.dir then
    self:take_start()
  end
  if from and from.manifest.finished then
    say("job already finished (%s); nothing to do (--fresh runs it again)", from.name)
    self.finished = true
    return self
  end
  self.from = from
  if from then
    -- write_text files are reopened at their committed length (Job:reopen_file)
    job.restore_files = {}
    local by_uid = {}
    for _, node in ipairs(job.plan.nodes) do
      by_uid[node.ckpt_uid] = node
    end
    for _, s in ipairs(from.sections) do
      if s.name:match("^sink/") and type(s.value) == "table" and s.value.files then
        local node = by_uid[s.name:match("^sink/(.*)$")]
        local files = s.value.files
        if node and node.sink == "write_text" and #files > 0 then
          -- a rescale keeps the files' shape: one file at parallelism 1, else a directory
          local was_dir = #files > 1 or files[1].path ~= node.path
          if was_dir ~= (node.parallelism > 1) then
            job_error(("cannot restore %s: %s wrote %s, at parallelism %d it writes %s; "
              .. "keep the sink's parallelism 1 or above 1 (set_parallelism on the sink)")
              :format(from.name, node.label, was_dir and ("the directory " .. node.path)
                or ("the file " .. node.path), node.parallelism, node.parallelism > 1
                and "a directory" or "a file"))
          end
        end
        for _, f in ipairs(files) do
          job.restore_files[f.path] = f.length
        end
      end
    end
  end
  return self
end

---The paths of a write_text node's files (as Job:open_file names them).
local function sink_paths(node)
  if node.parallelism == 1 then
    return { node.path }
  end
  local out = {}
  for st = 1, node.parallelism do
    out[st] = node.path .. "/" .. st
  end
  return out
end

---A fresh start's first checkpoint, written before any output file exists: every write_text
---file at length 0. A crash before the first periodic checkpoint then restores this one
---(nothing processed, the files cut to nothing) instead of finding output files that a fresh
---start refuses to overwrite. A file that is already there is refused first, as without
---checkpoints.
function Ck:take_start()
  local job = self.job
  local sections = {}
  for _, node in ipairs(job.plan.nodes) do
    if node.kind == "sink" and node.sink == "write_text" then
      local files = {}
      for i, path in ipairs(sink_paths(node)) do
        local fh = io.open(path, "rb")
        if fh then
          fh:close()
          if not node.overwrite then
            job_error(("%s: %s already exists (use write_text(path, {overwrite = true}))")
              :format(node.label, path))
          end
        end
        files[i] = { path = path, length = 0 }
      end
      sections[#sections + 1] = { name = "sink/" .. node.ckpt_uid, key_group = -1,
                                  value = { files = files } }
    end
  end
  self:write(sections, "checkpoint", true)
end

---write_text's file at a restore: what the checkpoint committed stays, the tail written after
---it is cut (it is written again, the same for a deterministic job).
function Job:reopen_file(node, path, committed)
  local fh, err = io.open(path, "r+b")
  if not fh and committed == 0 then
    fh, err = io.open(path, "w+b") -- the start checkpoint came before the file
  end
  if not fh then
    job_error(("%s: cannot continue %s from the checkpoint: %s"):format(node.label, path,
      tostring(err)))
  end
  local size = fh:seek("end")
  fh:close()
  if size < committed then
    job_error(("%s: cannot continue %s from the checkpoint: it has %d bytes, the checkpoint "
      .. "committed %d"):format(node.label, path, size, committed))
  end
  local rc = C.weir_ckpt_truncate(path, committed)
  if rc ~= 0 then
    job_error(("%s: cannot truncate %s: %s"):format(node.label, path,
      ffi.string(C.weir_strerror(rc))))
  end
  fh, err = io.open(path, "r+b")
  if not fh then
    job_error(("%s: cannot write %s"):format(node.label, tostring(err)))
  end
  fh:seek("end")
  self.files[#self.files + 1] = { fh = fh, path = path, node = node }
  return fh, path
end

-- Restoring -------------------------------------------------------------------------------

---After the operators are instantiated and the sources opened, before open() and the start:
---registers the parts, and restores the chosen checkpoint into them.
function Ck:attach()
  self.restored_sources = {}
  self.after_open_work = {} -- what waits for open(): keyed state (weir.checkpoint_parts)
  inputlog.attach(self)
  self.registry = parts.registry(self)
  if self.from then
    local t0 = C.weir_ckpt_clock_ms()
    self:restore(self.from)
    local st = self.stats
    st.restore_read_ms = self.read_ms
    st.restore_ms = self.read_ms + (C.weir_ckpt_clock_ms() - t0)
    st.restored_from = self.from.path
  end
  self.next_due = -INF -- the first due time is set after the first batch, on the running clock
end

---After open() of every user function, before the first record: the restore's keyed state
---(open() made the states it goes into).
function Ck:after_open()
  local work = self.after_open_work or {}
  self.after_open_work = nil -- a later restore (open() has run) puts keyed state back at once
  local t0 = C.weir_ckpt_clock_ms()
  for _, f in ipairs(work) do
    f()
  end
  if #work > 0 then
    self.stats.restore_ms = self.stats.restore_ms + (C.weir_ckpt_clock_ms() - t0)
  end
end

---The job's operators for the MANIFEST, and what a restore compares.
function M.operators(job)
  local out = {}
  for _, node in ipairs(job.plan.nodes) do
    out[#out + 1] = { uid = node.ckpt_uid, label = node.label, kind = node.kind,
                      parallelism = node.parallelism, max_parallelism = node.max_parallelism }
  end
  return out
end

local function keyed_input(node)
  for _, port in ipairs(node.inputs or {}) do
    if port.mode == "hash" then
      return true
    end
  end
  return false
end

---Checks the checkpoint against the job (operators by uid, max parallelism), then hands the
---parts their sections, and says what was restored.
function Ck:restore(from)
  local job = self.job
  local man = from.manifest
  local by_uid = {}
  for _, node in ipairs(job.plan.nodes) do
    by_uid[node.ckpt_uid] = node
  end
  local gone = {}
  for _, op in ipairs(man.operators or {}) do
    local node = by_uid[op.uid]
    if not node then
      gone[#gone + 1] = op
    elseif op.kind ~= node.kind then
      job_error(("cannot restore %s: operator %s is a %s in the checkpoint (%s), a %s now (%s)")
        :format(from.name, op.uid, op.kind, op.label, node.kind, node.label))
    elseif op.max_parallelism and node.max_parallelism and keyed_input(node)
      and op.max_parallelism ~= node.max_parallelism then
      job_error(("cannot restore %s: %s: max parallelism %s in the checkpoint, %s now (key "
        .. "groups are fixed)"):format(from.name, node.label, tostring(op.max_parallelism),
        tostring(node.max_parallelism)))
    end
  end
  local sections = {}
  for _, s in ipairs(from.sections) do
    local uid = s.name:match("^%a+/([^/]+)")
    local dropped = false
    for _, op in ipairs(gone) do
      if op.uid == uid then
        dropped = true
      end
    end
    if not dropped then
      sections[#sections + 1] = s
    end
  end
  for _, op in ipairs(gone) do
    if not self.opts.allow_non_restored_state then
      job_error(("cannot restore %s: it holds state of operator %s (%s), which the job no "
        .. "longer has; --allow-non-restored-state drops it"):format(from.name, op.uid,
        op.label))
    end
    say("dropping the state of operator %s (%s): the job no longer has it", op.uid, op.label)
  end
  local unused, missing = self.registry:restore(sections)
  for _, name in ipairs(unused) do
    -- a rebalance counter of an edge that a rescale made forward has nothing to go to
    if not self.opts.allow_non_restored_state and not name:match("^rebalance/") then
      job_error(("cannot restore %s: its section %s has no place in this job; "
        .. "--allow-non-restored-state drops it"):format(from.name, name))
    end
  end
  for _, name in ipairs(missing) do
    local part = self.registry.by_name[name]
    if not man.start and not name:match("^op/") and not name:match("^rebalance/")
      and not name:match("^keyed/") then
      say("%s: nothing in %s; it starts empty", part.what, from.name)
    end
  end
  local text = ("restored %s"):format(from.path)
  if man.start then
    text = text .. " (the start: nothing had been processed)"
  elseif #self.restored_sources > 0 then
    text = text .. ": " .. table.concat(self.restored_sources, "; ")
  end
  if not from.quiet then
    say("%s", text)
  end
  self.restored_from = from.path
end

-- Taking checkpoints ------------------------------------------------------------------------

---What env:metrics().checkpoints shows (docs/API.md, Checkpoints): checkpoints taken and
---failed, the last one's bytes, its pause (what the job's loop spent on it: ms on the
---monotonic clock), the longest and the total pause, what the writer spent on the last one
---(making the sections, encoding, writing with the fsyncs and the commit) and how long it took
---from the pause to the commit, the writer process's CPU time (the last one's, all), and the
---restore's time; every field there from the start.
function M.new_stats()
  return { taken = 0, failed = 0, last_id = 0, last_bytes = 0, last_pause_ms = 0,
           max_pause_ms = 0, total_pause_ms = 0, last_pause_cpu_ms = 0,
           total_pause_cpu_ms = 0, last_snapshot_ms = 0, last_encode_ms = 0,
           last_write_ms = 0, last_duration_ms = 0, last_writer_cpu_ms = 0,
           total_writer_cpu_ms = 0, last_writer_faults = 0, total_writer_faults = 0,
           restore_ms = 0, restore_read_ms = 0,
           restored_from = false }
end

local buffer = require("string.buffer")
local clock = C.weir_ckpt_clock_ms
local cpu_clock = C.weir_ckpt_cpu_ms
local MSG_CAP = C.WEIR_CKPT_MSG_MAX + 1
local MAX_TEXT = 4000 -- of a failure's text from the writer (its message holds 16 KiB)

---The MANIFEST of checkpoint id (its files are filled in as it is written) and the files to
---fsync with it (write_text sinks'): made in the job, from the job's tables.
function Ck:manifest(id, kind, start)
  local job = self.job
  local sync = {}
  for _, f in ipairs(job.files) do
    sync[#sync + 1] = f.path
  end
  for _, list in pairs(self.final_lengths or {}) do
    for _, f in ipairs(list) do
      sync[#sync + 1] = f.path
    end
  end
  local sources = {}
  for _, node in ipairs(job.plan.sources) do
    sources[#sources + 1] = { uid = node.ckpt_uid, label = node.label, kind = node.source,
                              path = node.path, log_offset = inputlog.offset(self, node) }
  end
  inputlog.sync_paths(self, sync)
  return {
    id = id, kind = kind, finished = kind == "final", start = start or nil,
    taken_ms = job.rt and C.weir_rt_now(job.rt) or nil,
    weir = ffi.string(C.weir_version()),
    job = { script = job.plan.env.job.script, name = job.plan.job_name },
    operators = M.operators(job), sources = sources,
  }, sync
end

local function text_of(err)
  local t = type(err) == "table" and err.text or tostring(err)
  return #t > MAX_TEXT and (t:sub(1, MAX_TEXT) .. " ...") or t
end

---The writer's work (in the writer process, or in the job without one): the sections (the
---keyed parts' made here, the others' taken in pre, or all of them given), encoded and written.
---Returns a plain result: {path, bytes, snapshot_ms, encode_ms, write_ms}, {declined = why}
---(a write error) or {fatal = why} (state a checkpoint cannot keep).
function Ck:work(manifest, sync, pre, sections)
  local t0 = clock()
  if not sections then
    local ok, got = pcall(self.registry.snapshot, self.registry, pre)
    if not ok then
      return { fatal = text_of(got) }
    end
    sections = got
  end
  local t1 = clock()
  local times = {}
  local wok, path, bytes = pcall(checkpoint.write, self.dir, manifest, sections, sync, times)
  if not wok then
    return { fatal = text_of(path) }
  end
  if not path then
    return { declined = text_of(bytes) }
  end
  return { path = path, bytes = bytes, snapshot_ms = t1 - t0, encode_ms = times.encode_ms,
           write_ms = times.write_ms }
end

---Takes one checkpoint of kind "checkpoint", "savepoint" or "final" (finished). The job flushes
---its write_text files and takes the parts that are not keyed (sources, operators' watermarks,
---rich functions' snapshot_state, sinks: small, and some call user code); then a writer
---process forked from the job (weir_ckpt_fork: the job's memory as it is now, copy on write)
---makes the keyed parts' sections (windows, keyed state), encodes and writes them while the
---job goes on: the pause is the fork. One writer at a time; with wait (interval 0, savepoint,
---final) the job waits for it. Without fork, the job does the writer's work itself.
function Ck:take(kind, wait)
  if not self.dir then
    return
  end
  if self.child then
    if not wait then
      return nil
    end
    self:reap(true)
  end
  local t0, c0 = clock(), cpu_clock()
  for _, f in ipairs(self.job.files) do
    f.fh:flush() -- written by the job, before the copy (an error: the sink's part names it)
  end
  local ok, pre = pcall(self.registry.snapshot_unkeyed, self.registry)
  if not ok then
    job_error(("checkpoint %d: %s"):format(self.next_id, text_of(pre)))
  end
  local id = self.next_id
  self.next_id = id + 1
  local manifest, sync = self:manifest(id, kind)
  local pid = -1
  if not self.no_fork then
    self.fd_box = self.fd_box or ffi.new("int32_t[1]")
    pid = C.weir_ckpt_fork(self.lock_fd or -1, self.fd_box)
  end
  if pid == 0 then -- the writer process: it never returns
    C.weir_mem_set_limit(0) -- the job's memory limit is the job's; this copy ends soon
    checkpoint.writer_gc() -- no collection walking the heap it shares with the job
    local msg = buffer.encode(self:work(manifest, sync, pre))
    C.weir_ckpt_child_exit(self.fd_box[0], msg, #msg)
  end
  if pid < 0 then
    if not self.no_fork then
      self.no_fork = true
      say("checkpoint %d: cannot start a writer process (%s); the job writes its checkpoints "
        .. "itself", id, ffi.string(C.weir_strerror(pid)))
    end
    local r = self:work(manifest, sync, pre)
    r.pause_ms, r.pause_cpu_ms = clock() - t0, cpu_clock() - c0
    r.duration_ms = r.pause_ms
    return self:done(id, r, kind)
  end
  self.child = { pid = pid, fd = self.fd_box[0], id = id, kind = kind, t0 = t0,
                 pause_ms = clock() - t0, pause_cpu_ms = cpu_clock() - c0,
                 tmp = self.dir .. "/.tmp-" .. checkpoint.dir_name(id, kind) }
  -- While the writer lives the job's pages are shared with it, and the job's first write to
  -- each copies it: a collection marks every live object, so one cycle would copy the whole
  -- heap. The job's collector waits for the writer (its heap may grow by half and 64 MiB
  -- meanwhile; past that it runs again).
  if not self.gc_ceiling_kb then
    self.gc_ceiling_kb = collectgarbage("count") * 1.5 + 64 * 1024
    collectgarbage("stop")
  end
  if wait then
    return self:reap(true)
  end
end

---The writer's result, if it ended (block: waits for it): the checkpoint's path, or nil.
function Ck:reap(block)
  local c = self.child
  self.msg_buf = self.msg_buf or ffi.new("char[?]", MSG_CAP)
  self.status_box = self.status_box or ffi.new("int32_t[1]")
  local n = C.weir_ckpt_wait(c.pid, c.fd, block and 1 or 0, self.msg_buf, MSG_CAP,
    self.status_box)
  if n == 0 then
    return nil
  end
  self.child = nil
  self:gc_resume()
  local r
  if n < 0 then
    r = { fatal = "waiting for the checkpoint writer: " .. ffi.string(C.weir_strerror(n)) }
  else
    local ok, v = pcall(buffer.decode, ffi.string(self.msg_buf, n - 1))
    if ok and type(v) == "table" then
      r = v
    else
      local st = self.status_box[0]
      C.weir_ckpt_remove(c.tmp)
      r = { declined = ("its writer process ended without a result (%s)"):format(st < 0
        and ("signal " .. -st) or ("exit code " .. st)) }
    end
  end
  r.pause_ms, r.pause_cpu_ms = c.pause_ms, c.pause_cpu_ms
  r.duration_ms = clock() - c.t0
  r.writer_cpu_ms = C.weir_ckpt_writer_cpu_ms()
  r.writer_faults = C.weir_ckpt_writer_faults()
  return self:done(c.id, r, c.kind)
end

---The job's collector runs again (the writer is gone, or the heap grew past the ceiling).
function Ck:gc_resume()
  if self.gc_ceiling_kb then
    self.gc_ceiling_kb = false
    collectgarbage("restart")
  end
end

---Counts a writer's result r for checkpoint id: a fatal one fails the job, a declined one is a
---warning until TOLERABLE_FAILURES in a row fail the job. Returns the path, or nil.
function Ck:done(id, r, kind)
  local st = self.stats
  st.last_pause_ms, st.total_pause_ms = r.pause_ms, st.total_pause_ms + r.pause_ms
  st.last_pause_cpu_ms = r.pause_cpu_ms or 0
  st.total_pause_cpu_ms = st.total_pause_cpu_ms + st.last_pause_cpu_ms
  st.last_writer_cpu_ms = r.writer_cpu_ms or 0 -- no writer process: the job's own time
  st.total_writer_cpu_ms = st.total_writer_cpu_ms + st.last_writer_cpu_ms
  st.last_writer_faults = r.writer_faults or 0
  st.total_writer_faults = st.total_writer_faults + st.last_writer_faults
  st.max_pause_ms = math.max(st.max_pause_ms, r.pause_ms)
  if r.fatal then
    job_error(("checkpoint %d: %s"):format(id, r.fatal))
  end
  if r.declined then
    self.failures = self.failures + 1
    st.failed = st.failed + 1
    if self.failures >= TOLERABLE_FAILURES then
      job_error(("checkpoint %d failed, %d in a row: %s"):format(id, self.failures, r.declined))
    end
    say("checkpoint %d declined: %s (%d failure%s in a row, %d fail the job; it goes on)",
      id, r.declined, self.failures, self.failures == 1 and "" or "s", TOLERABLE_FAILURES)
    return nil
  end
  self.failures = 0
  self.taken = self.taken + 1
  self.last_path, self.last_bytes = r.path, r.bytes
  st.taken, st.last_id, st.last_bytes = self.taken, id, r.bytes
  st.last_snapshot_ms, st.last_encode_ms, st.last_write_ms = r.snapshot_ms, r.encode_ms,
    r.write_ms
  st.last_duration_ms = r.duration_ms
  for _, node in ipairs(self.job.plan.sources) do
    if node.source == "kafka" and self.job.rt then -- its offsets, once the checkpoint holds them
      require("weir.kafka").committed(self.job, node, kind ~= "checkpoint")
    end
  end
  checkpoint.prune(self.dir, KEPT)
  inputlog.release(self)
  return r.path
end

---Commits sections as the next checkpoint of kind, in the job (the fresh start's).
function Ck:write(sections, kind, start)
  local id = self.next_id
  self.next_id = id + 1
  local manifest, sync = self:manifest(id, kind, start)
  local t0 = clock()
  local r = self:work(manifest, sync, nil, sections)
  r.pause_ms = 0 -- written before the job starts: it pauses nothing
  r.duration_ms = clock() - t0
  return self:done(id, r, kind)
end

---After every batch: the writer's result when it is done; a checkpoint when one is due
---(processing time, every interval; one that falls due while the writer still works is taken
---after it: on the real clock at the first batch after it ended, on a replay's virtual clock,
---which has nothing to do with the writer's time, at once after waiting for it, so a replay
---takes the same checkpoints every run). Interval 0: after every batch, waiting for each.
function Ck:after_batch()
  if self.child then
    self:reap(false)
  end
  if self.gc_ceiling_kb and collectgarbage("count") > self.gc_ceiling_kb then
    self:gc_resume()
  end
  local now = C.weir_rt_now(self.job.rt)
  if self.next_due == -INF then
    self.next_due = now + self.interval_ms
  end
  if self.child and now >= self.next_due and self.job.virtual_clock then
    self:reap(true)
  end
  if now >= self.next_due and self.dir and not self.child then
    self:take("checkpoint", self.interval_ms == 0)
    self.next_due = now + self.interval_ms
  end
end

---After the loop: a stop by signal leaves a savepoint (state and positions at the drain).
function Ck:before_finish()
  local job = self.job
  if self.child then
    self:reap(true) -- its result first (a failure counts before the last one)
  end
  if job.stopped and self.dir then
    local path = self:take("savepoint", true)
    if path then
      say("stopped with a savepoint: %s (run again with --checkpoint-dir %s to continue)",
        path, self.dir)
    end
  end
  -- the files' lengths as finish() closes them, for the final checkpoint
  self.final_lengths = {}
  for _, f in ipairs(job.files) do
    local list = self.final_lengths[f.node] or {}
    list[#list + 1] = { path = f.path }
    self.final_lengths[f.node] = list
  end
end

---After finish(): a job that ended by end of input leaves its final checkpoint.
function Ck:after_finish()
  if self.job.stopped or not self.dir then
    return
  end
  for _, list in pairs(self.final_lengths) do
    for _, f in ipairs(list) do
      local fh = io.open(f.path, "rb")
      f.length = fh and fh:seek("end") or 0
      if fh then
        fh:close()
      end
    end
  end
  self:take("final", true)
end

function Ck:close()
  local c = self.child
  if c then -- the job failed while its writer worked: let it end (its result no longer counts)
    self.child = nil
    local buf, box = ffi.new("char[2]"), ffi.new("int32_t[1]")
    C.weir_ckpt_wait(c.pid, c.fd, 1, buf, 2, box)
  end
  if self.lock_fd then
    C.weir_ckpt_unlock(self.lock_fd)
    self.lock_fd = nil
  end
end

return M
