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
local checkpoint = require("weir.checkpoint")
local duration = require("weir.duration")
local failure = require("weir.failure")
local inputlog = require("weir.inputlog")
local parts = require("weir.checkpoint_parts")

local M = {}
local Job = {}
M.methods = Job

local job_error = failure.job_error
local DEFAULT_INTERVAL_MS = 10000
local KEPT = 3
local TOLERABLE_FAILURES = 3 -- consecutive failed checkpoints before the job fails
local INF = math.huge
local UV_EAGAIN = -11 -- weir_ckpt_lock's "held by another writer" (-EAGAIN on Linux)

local say = parts.say

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
                              interval_ms = DEFAULT_INTERVAL_MS, taken = 0 }, Ck)
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
    self:restore(self.from)
  end
  self.next_due = -INF -- the first due time is set after the first batch, on the running clock
end

---After open() of every user function, before the first record: the restore's keyed state
---(open() made the states it goes into).
function Ck:after_open()
  local work = self.after_open_work or {}
  self.after_open_work = nil -- a later restore (open() has run) puts keyed state back at once
  for _, f in ipairs(work) do
    f()
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

---Writes one checkpoint of kind "checkpoint", "savepoint" or "final" (finished). A write error
---declines it (a warning; the job goes on) until TOLERABLE_FAILURES in a row fail the job.
function Ck:take(kind)
  if not self.dir then
    return
  end
  local ok, sections = pcall(self.registry.snapshot, self.registry)
  if not ok then
    job_error(("checkpoint %d: %s"):format(self.next_id, type(sections) == "table"
      and sections.text or tostring(sections)))
  end
  return self:write(sections, kind)
end

---Commits sections as the next checkpoint of kind (start: the fresh start's).
function Ck:write(sections, kind, start)
  local job = self.job
  local id = self.next_id
  self.next_id = id + 1
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
  local manifest = {
    id = id, kind = kind, finished = kind == "final", start = start or nil,
    taken_ms = job.rt and C.weir_rt_now(job.rt) or nil,
    weir = ffi.string(C.weir_version()),
    job = { script = job.plan.env.job.script, name = job.plan.job_name },
    operators = M.operators(job), sources = sources,
  }
  local wok, path, bytes = pcall(checkpoint.write, self.dir, manifest, sections, sync)
  if not wok then
    job_error(("checkpoint %d: %s"):format(id, tostring(path)))
  end
  if not path then
    self.failures = self.failures + 1
    if self.failures >= TOLERABLE_FAILURES then
      job_error(("checkpoint %d failed, %d in a row: %s"):format(id, self.failures, bytes))
    end
    say("checkpoint %d declined: %s (%d failure%s in a row, %d fail the job; it goes on)",
      id, bytes, self.failures, self.failures == 1 and "" or "s", TOLERABLE_FAILURES)
    return nil
  end
  self.failures = 0
  self.taken = self.taken + 1
  self.last_path, self.last_bytes = path, bytes
  for _, node in ipairs(job.plan.sources) do
    if node.source == "kafka" and job.rt then -- Kafka's offsets, once the checkpoint holds them
      require("weir.kafka").committed(job, node, kind ~= "checkpoint")
    end
  end
  checkpoint.prune(self.dir, KEPT)
  inputlog.release(self)
  return path
end

---After every batch: a checkpoint when one is due (processing time, every interval).
function Ck:after_batch()
  local now = C.weir_rt_now(self.job.rt)
  if self.next_due == -INF then
    self.next_due = now + self.interval_ms
  end
  if now >= self.next_due and self.dir then
    self:take("checkpoint")
    self.next_due = now + self.interval_ms
  end
end

---After the loop: a stop by signal leaves a savepoint (state and positions at the drain).
function Ck:before_finish()
  local job = self.job
  if job.stopped and self.dir then
    local path = self:take("savepoint")
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
  self:take("final")
end

function Ck:close()
  if self.lock_fd then
    C.weir_ckpt_unlock(self.lock_fd)
    self.lock_fd = nil
  end
end

return M
