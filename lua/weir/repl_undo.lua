-- weir.repl_undo: the REPL steps back in time (:undo [N], :checkpoint, :savepoint DIR,
-- :restore N|PATH). After every line that changed the running job's state (a :push, a fed
-- record, :advance, :step, :end, Lua that touched the job, ...) the job is snapshotted in memory
-- with the checkpoint machinery: the registry of weir.checkpoint_parts, encoded as a state file
-- (weir.checkpoint.encode_state), so a step holds exactly what `weir run --checkpoint-dir`
-- keeps, and every part the registry gains is kept too. Going back starts the job again from a
-- snapshot, as `weir run --restore` does (weir.checkpoint_job: the compatibility checks, then
-- each part's restore before open()), with the REPL's own trace (:late, :draw) and paused
-- replays as they were. Memory is bounded: the last KEPT steps within BUDGET bytes of encoded
-- state (the oldest go first), and the last MARKS :checkpoints.
local ffi = require("ffi")
local C = require("weir.ffi")
local checkpoint = require("weir.checkpoint")
local checkpoint_job = require("weir.checkpoint_job")
local parts = require("weir.checkpoint_parts")
local status = require("weir.status")
local timeline = require("weir.timeline")
local windowing = require("weir.windowing")
local session = require("weir.repl_session")
local job_ctl = require("weir.repl_job")

local S, say = session.S, session.say
local report_error, usage = session.report_error, session.usage

local M = {}

M.KEPT = 64 -- steps kept for :undo
M.BUDGET = 64 * 1024 * 1024 -- bytes of encoded state over all steps
M.MARKS = 16 -- :checkpoint snapshots kept

-- Commands that do not change the job's state: no snapshot after them.
local READ_ONLY = {
  help = true, status = true, windows = true, timers = true, why = true, late = true,
  draw = true, now = true, clock = true, checkpoint = true, undo = true, savepoint = true,
}

local UV_EAGAIN = -11 -- weir_ckpt_lock: held by another writer

-- What the REPL keeps beside the job's state ------------------------------------------------

local function shallow(t)
  local c = {}
  for k, v in pairs(t) do
    c[k] = v
  end
  return c
end

-- The REPL's trace (:late, :draw; weir.wincontext): its lists are appended to, and the timeline
-- stamps entries, so a step keeps copies (records and nodes are shared, never changed).
local function copy_trace(t)
  if not t then
    return nil
  end
  local c = { late = {}, elements = {}, keys = {}, fired = {} }
  for i, l in ipairs(t.late) do
    c.late[i] = shallow(l)
  end
  for i, k in ipairs(t.keys) do
    c.keys[i] = k
  end
  for k, per in pairs(t.elements) do
    c.elements[k] = shallow(per)
  end
  for i, f in ipairs(t.fired) do
    c.fired[i] = shallow(f)
  end
  return c
end

-- The watermark a step names: the lowest at the job's sinks (at every operator without sinks).
local function watermark(job)
  local low, any = math.huge, false
  for _, node in ipairs(job.plan.nodes) do
    if node.kind == "sink" then
      for _, inst in ipairs(node.instances) do
        low, any = math.min(low, inst.watermark), true
      end
    end
  end
  if not any then
    for _, node in ipairs(job.plan.nodes) do
      for _, inst in ipairs(node.instances or {}) do
        low = math.min(low, inst.watermark)
      end
    end
  end
  return low
end

local function when(step)
  return ("now %s, watermark %s"):format(status.wm_text(step.now), status.wm_text(step.wm))
end

local function describe(step)
  return step.first and "the start" or ("after " .. step.label)
end

-- The history ------------------------------------------------------------------------------

-- An operator whose state checkpoints do not keep yet (docs/API.md, Checkpoints): a window
-- operator while the window layer offers no checkpoint parts, a keyed one while weir.keyed
-- snapshots no key groups. Such a job cannot step back; the name of what is missing.
local function unsupported(plan)
  for _, node in ipairs(plan.nodes) do
    if node.kind == "window" and not windowing.checkpoint_parts then
      return node, "window state"
    elseif (node.kind == "keyed_process" or node.kind == "rolling")
        and not require("weir.keyed").snapshot_groups then
      return node, "keyed state"
    end
  end
end

---A new :start (not a restore): a new history for job, on clock ("virtual" or "real").
function M.started(job, clock)
  local h = { plan = job.plan, steps = {}, marks = {}, bytes = 0, dropped = 0, clock = clock }
  S.undo = h
  local node, what = unsupported(job.plan)
  if node then
    h.off = ("%s: %s is not in checkpoints yet (docs/API.md, Checkpoints), so this job cannot "
      .. "step back"):format(node.label, what)
    return
  end
  checkpoint_job.assign_uids(job.plan)
end

function M.forget()
  S.undo = nil
end

local function registry(h, job)
  if h.registry_job ~= job then
    local ck = job.checkpointer
    h.registry = ck and ck.registry or parts.registry({ job = job, restored_sources = {} })
    h.registry_job = job
  end
  return h.registry
end

-- The running job's state as one step (nil and the error when a part cannot be kept).
local function capture(h, job, label)
  local ok, state = pcall(function()
    return (checkpoint.encode_state(0, registry(h, job):snapshot()))
  end)
  if not ok then
    return nil, type(state) == "table" and (state.text or state.msg) or tostring(state)
  end
  local held = #S.replays > 0 -- paused replays (not after :run)
  return { label = label, state = state, now = job:now(), wm = watermark(job),
           trace = copy_trace(S.trace), held = held,
           recorder = S.timeline and timeline.save(S.timeline) } -- :draw --svg's
end

local function push_step(h, step)
  local steps = h.steps
  steps[#steps + 1] = step
  h.bytes = h.bytes + (step.state and #step.state or 0)
  while #steps > 1 and (#steps > M.KEPT or h.bytes > M.BUDGET) do
    local old = table.remove(steps, 1)
    h.bytes = h.bytes - (old.state and #old.state or 0)
    h.dropped = h.dropped + 1
  end
end

---After each line at the prompt (cmd: the command's name, nil for Lua or a fed record): a
---step when the running job's state changed, or when the job ended with it.
function M.after_line(label, cmd)
  local h = S.undo
  if not h or h.off or (cmd and READ_ONLY[cmd]) then
    return
  end
  local steps = h.steps
  local last = steps[#steps]
  if S.job and S.job.plan == h.plan then
    local step, err = capture(h, S.job, label)
    if not step then
      h.off = ("the job's state cannot be kept, so it cannot step back: %s"):format(err)
      return report_error(h.off)
    end
    if last and last.state == step.state then
      return
    end
    step.first = #steps == 0 and h.dropped == 0 and cmd == "start"
    push_step(h, step)
  elseif last and last.state and S.last and S.last.job.plan == h.plan then
    push_step(h, { label = label, ended = S.last.how }) -- undo 1 goes back before it
  end
end

-- Going back -------------------------------------------------------------------------------

-- Starts the job again from sections (a checkpoint's, decoded), with the trace and replays
-- of the REPL as given. Returns true, or reports what failed.
local function restart(h, from, trace, held, recorder)
  if S.job then
    S.job:close() -- no end-of-input, no close(): the job goes on from the snapshot instead
    S.job, S.manual = nil, nil
    session.open_bare()
  end
  S.last = nil
  local clock = job_ctl.start_job({ from = from, trace = copy_trace(trace), held = held,
                                    clock = h.clock })
  if clock and recorder and S.timeline then
    timeline.load(S.timeline, recorder)
  end
  return clock
end

local function from_step(h, step)
  local sections, err = checkpoint.decode_state(step.state)
  assert(sections, err) -- it was encoded in this process
  return { path = "(the REPL's snapshot)", name = describe(step), quiet = true,
           manifest = { operators = h.operators, start = step.first or nil },
           sections = sections }
end

local function go_to(h, step)
  h.operators = h.operators or checkpoint_job.operators({ plan = h.plan })
  return restart(h, from_step(h, step), step.trace, step.held, step.recorder)
end

local function parse_count(arg)
  if arg == "" then
    return 1
  end
  local n = tonumber(arg)
  if not n or n < 1 or n % 1 ~= 0 then
    return nil
  end
  return n
end

local function history()
  local h = S.undo
  if not h then
    usage("nothing to go back to: :start a job first")
  elseif h.off then
    usage(h.off)
  elseif h.plan ~= S.plan then
    usage("the job was built again (env:execute()) since its steps were taken: :start it")
  else
    return h
  end
end

---:undo [N]: back N steps.
function M.undo(arg)
  local n = parse_count(arg)
  if not n then
    return usage(":undo [N]: N is how many commands to go back (1 when left out)")
  end
  local h = history()
  if not h then
    return
  end
  local steps = h.steps
  local target = #steps - n
  if target < 1 then
    local kept = h.dropped > 0 and (" (older steps were let go: the last %d are kept, within %d "
      .. "MiB)"):format(M.KEPT, math.floor(M.BUDGET / (1024 * 1024))) or ""
    return usage(("cannot go back %d: the steps kept go back %d, to %s%s"):format(n,
      #steps - 1, steps[1] and describe(steps[1]) or "nothing", kept))
  end
  local undone = {}
  for i = target + 1, math.min(#steps, target + 5) do
    undone[#undone + 1] = steps[i].label
  end
  if n > 5 then
    undone[#undone + 1] = ("and %d more"):format(n - 5)
  end
  local now = S.job and steps[#steps]
  if not go_to(h, steps[target]) then
    if now and now.state then
      say("the job goes on as it was")
      go_to(h, now)
    end
    return
  end
  for i = #steps, target + 1, -1 do
    local old = table.remove(steps, i)
    h.bytes = h.bytes - (old.state and #old.state or 0)
  end
  job_ctl.pump()
  say(("back %d to %s: %s (undone: %s)"):format(n, describe(steps[target]), when(steps[target]),
    table.concat(undone, ", ")))
end

-- :checkpoint and :restore -----------------------------------------------------------------

---:checkpoint: the state now, kept aside for :restore N.
function M.checkpoint(arg)
  if arg ~= "" then
    return usage(":checkpoint takes nothing (:savepoint DIR writes one to disk)")
  end
  if not S.job then
    return usage("no job is running (:start; :undo goes back into one that ended)")
  end
  local h = history()
  if not h then
    return
  end
  local last = h.steps[#h.steps]
  local step, err = capture(h, S.job, last and last.label or ":checkpoint")
  if not step then
    return report_error(("cannot take a checkpoint: %s"):format(err))
  end
  step.first = last and last.first and last.state == step.state
  h.marks_taken = (h.marks_taken or 0) + 1
  step.mark = h.marks_taken
  h.marks[#h.marks + 1] = step
  if #h.marks > M.MARKS then
    table.remove(h.marks, 1)
  end
  say(("checkpoint %d: %s, %s (:restore %d goes back to it)"):format(step.mark,
    describe(step), when(step), step.mark))
end

-- :restore PATH: a checkpoint or savepoint on disk, into the REPL's job.
local function restore_path(path)
  local man, sections = checkpoint.read(path)
  if not man then
    return report_error(("%s: not a valid checkpoint: %s"):format(path, sections))
  end
  if man.finished then
    return report_error(("%s: the job had finished (its input ended): nothing to go on with")
      :format(path))
  end
  local h = S.undo
  if not h or h.plan ~= S.plan then
    if not S.plan then
      return usage("no job to restore into: build one and call env:execute() first")
    end
    M.started({ plan = S.plan }, S.clock)
    h = S.undo
  end
  if h.off then
    return usage(h.off)
  end
  local back = S.job and capture(h, S.job, "")
  checkpoint_job.assign_uids(S.plan)
  local from = { path = path, name = path, quiet = true, manifest = man, sections = sections }
  if not restart(h, from, nil, true) then
    if back then
      say("the job goes on as it was")
      go_to(h, back)
    end
    return
  end
  job_ctl.pump()
  if not S.job then
    return
  end
  local where = S.job.checkpointer.restored_sources
  say(("restored %s%s: %s"):format(path, #where > 0 and (" (" .. table.concat(where, "; ")
    .. ")") or "", when({ now = S.job:now(), wm = watermark(S.job) })))
end

---:restore N (a :checkpoint) or PATH (a checkpoint directory on disk).
function M.restore(arg)
  if arg == "" then
    return usage(":restore N (a :checkpoint) or :restore PATH (a checkpoint or savepoint)")
  end
  if not arg:match("^%d+$") then
    return restore_path(arg)
  end
  local h = history()
  if not h then
    return
  end
  local n = tonumber(arg)
  for _, step in ipairs(h.marks) do
    if step.mark == n then
      if go_to(h, step) then
        job_ctl.pump()
        say(("back to checkpoint %d: %s, %s"):format(n, describe(step), when(step)))
      end
      return
    end
  end
  local have = {}
  for _, step in ipairs(h.marks) do
    have[#have + 1] = tostring(step.mark)
  end
  usage(("no checkpoint %d (%s; a path of digits only: ./%s)"):format(n, #have > 0
    and ("kept: " .. table.concat(have, ", ")) or "none taken: :checkpoint takes one", arg))
end

-- :savepoint DIR -----------------------------------------------------------------------------

local function manifest(job, id)
  local sources, manual = {}, nil
  for _, node in ipairs(job.plan.sources) do
    sources[#sources + 1] = { uid = node.ckpt_uid, label = node.label, kind = node.source,
                              path = node.path }
    if node.source == "manual" then
      manual = node.label
    end
  end
  return { id = id, kind = "savepoint", taken_ms = C.weir_rt_now(job.rt),
           weir = ffi.string(C.weir_version()),
           job = { script = S.script, name = job.plan.job_name },
           operators = checkpoint_job.operators(job), sources = sources, repl_manual = manual }
end

---:savepoint DIR: the state now as a savepoint in DIR (weir checkpoint verify, weir run
-----restore and :restore read it).
function M.savepoint(dir)
  if dir == "" then
    return usage(":savepoint DIR (a checkpoint directory, as weir run --checkpoint-dir)")
  end
  local job = S.job
  if not job then
    return usage("no job is running (:start; :undo goes back into one that ended)")
  end
  local h = history()
  if not h then
    return
  end
  local rc = C.weir_out_mkdirs(dir)
  if rc ~= 0 then
    return report_error((":savepoint %s: %s"):format(dir, ffi.string(C.weir_strerror(rc))))
  end
  local fd = C.weir_ckpt_lock(dir)
  if fd < 0 then
    return report_error((":savepoint %s: %s"):format(dir, fd == UV_EAGAIN
      and "another weir is using it (its LOCK is held)" or ffi.string(C.weir_strerror(fd))))
  end
  local ok, path, bytes = pcall(function()
    local sections = registry(h, job):snapshot()
    local sync = {}
    for _, f in ipairs(job.files) do
      sync[#sync + 1] = f.path
    end
    return checkpoint.write(dir, manifest(job, checkpoint.next_id(dir)), sections, sync)
  end)
  C.weir_ckpt_unlock(fd)
  if not ok or not path then
    local err = not ok and (type(path) == "table" and path.text or tostring(path)) or bytes
    return report_error((":savepoint %s: %s"):format(dir, err))
  end
  local man = manifest(job, 0)
  local how = man.repl_manual
    and ("its records were typed at the prompt: :restore %s in weir repl goes on from it, "
      .. "weir run cannot"):format(path)
    or ("weir run %s%s --restore %s goes on from it"):format(S.script or "JOB.lua",
      job.plan.env.job.replay and (" --replay " .. job.plan.env.job.replay) or "", path)
  say(("savepoint %s: %s; %s"):format(path,
    when({ now = job:now(), wm = watermark(job) }), how))
end

return M
