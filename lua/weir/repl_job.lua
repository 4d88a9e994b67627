-- weir.repl_job: the REPL's job: loading the job script, starting the plan env:execute()
-- prepared (a replay starts paused), processing what is ready, stopping or ending it, keeping
-- the job that ended for the inspectors, and holding and releasing the replays' lines. Also
-- the count hook that stops the job's code (or a command) on Ctrl-C or SIGTERM: LuaJIT's
-- compiler is off for the session, so every loop runs it.
local ffi = require("ffi")
local C = require("weir.ffi")
local replay = require("weir.replay")
local status = require("weir.status")
local run = require("weir.run")
local session = require("weir.repl_session")

local S, say, rt = session.S, session.say, session.rt
local report_error, usage = session.report_error, session.usage

local M = {}

local EV_INPUT = tonumber(C.WEIR_EV_INPUT)
M.HOOK_COUNT = 10000 -- VM instructions between two looks at the signal flags
-- A Ctrl-C while the job runs between keystrokes (a live job's records, not a command) most
-- likely meant the line being typed: the job's code is stopped only if it is still running
-- this many hook calls (5e7 instructions, about a tenth of a second) later.
local BACKGROUND_HOOKS = 5000

-- Interrupts -------------------------------------------------------------------------------

-- The error a signal raises inside the job's code: a job failure, so that no on_error side
-- output takes it for a record's failure (weir.failure passes such tables on).
local function signal_error(kind, label)
  return { weir_job_error = true, repl_signal = kind, text = kind, label = label }
end

-- The operator whose code runs now (the hook's caller at level 2 and up): the innermost frame
-- the job knows, as its failure handler finds it (weir.failure).
local function running_label(job)
  for level = 2, 200 do
    local d = debug.getinfo(level, "f")
    if not d then
      break
    end
    local f = d.func
    local node = job.pushes[f] or job.drivers[f] or (job.firers[f] and job.firers[f].node)
    if node then
      return node.label
    elseif job.senders[f] then
      return ("key_by (key selector feeding %s)"):format(job.senders[f].label)
    end
  end
  local id = job.op_slot[0] -- weir's own code: the operator that ran last
  for _, node in ipairs(job.plan.nodes) do
    if node.id == id then
      return node.label
    end
  end
end

-- Whether a Ctrl-C that came now ends what runs: at once, unless the job's code runs in the
-- background; then only once that code has kept running for BACKGROUND_HOOKS more calls (if
-- it finishes first, the Ctrl-C goes to the prompt: it drops the line being typed).
local function interrupted(r)
  if S.background == 0 then
    return C.weir_repl_interrupted(r) == 1
  end
  if C.weir_repl_interrupt_pending(r) == 0 then
    S.waited = 0
    return false
  end
  S.waited = S.waited + 1
  return S.waited >= BACKGROUND_HOOKS and C.weir_repl_interrupted(r) == 1
end

-- The count hook: Ctrl-C or a stop signal ends what runs now.
function M.on_hook()
  local r = rt()
  if r == nil then
    return
  end
  local kind = interrupted(r) and "interrupted"
    or (C.weir_repl_stop_asked(r) == 1 and "terminated")
  if not kind then
    return
  end
  if kind == "terminated" then
    S.terminating = true
  else
    -- during a command the terminal is cooked and echoed ^C; between keystrokes libedit
    -- has it raw, and the prompt line is cleared already
    S.echoed = S.interactive and S.background == 0
  end
  if S.in_job > 0 and S.job then
    error(signal_error(kind, running_label(S.job)), 0)
  end
  error(kind, 2)
end

-- Runs f(...) as the job's code: a signal that comes meanwhile fails the job.
function M.in_job(f, ...)
  S.in_job = S.in_job + 1
  local res = { pcall(f, ...) }
  S.in_job = S.in_job - 1
  if not res[1] then
    error(res[2], 0)
  end
  return unpack(res, 2, table.maxn(res))
end

-- Job control -----------------------------------------------------------------------------

M.HOW = { ended = "has ended", stopped = "was stopped", failed = "failed",
          interrupted = "was interrupted", terminated = "was terminated" }

-- The job ended (how: "ended", "stopped", "failed", "interrupted"): it is kept, so that the
-- inspectors show its final state, until the next :start or :reset.
local function keep(job, how)
  job.now_override = job.rt ~= nil and job:now() or job.now_override
  job:close()
  S.job, S.manual = nil, nil
  S.last = { job = job, how = how }
  session.open_bare()
  -- the new runtime's input shows the prompt (the job may end between lines)
  session.prompt(S.prompt or "> ")
end

-- The job failed with err (raised by its code, or a signal): says so, keeps it.
function M.job_failed(err)
  local job = S.job
  if type(err) == "table" and err.repl_signal then
    local label = err.label
    local where = label and (" while " .. label .. " was running") or ""
    if err.repl_signal == "interrupted" then
      report_error(("interrupted%s: the job is stopped, its state is kept (:status, :windows, "
        .. ":why, :draw; :start runs it again)"):format(where))
    else
      report_error(("terminated by a signal%s: the job is stopped"):format(where))
      S.exit = 1 -- also at a terminal: the job did not drain
    end
    keep(job, err.repl_signal)
  else
    report_error(err)
    keep(job, "failed")
  end
end

-- mode "ended": the input ended (end-of-input fires what is left); "stopped": a stop (what
-- is in flight drains, nothing fires).
function M.finish_job(mode)
  local job = S.job
  if not job then
    return
  end
  local ok, err = pcall(M.in_job, function()
    if mode == "stopped" then
      C.weir_rt_stop(job.rt)
      -- drain what is in flight: the sources end as "stopped"
      while job.live > 0 do
        local n = job:poll()
        if n == 0 then
          break
        end
        if not (n == 1 and job.events[0].kind == EV_INPUT) then
          job:handle(n)
        end
      end
    end
    job:finish()
  end)
  if not ok then
    return M.job_failed(err)
  end
  keep(job, mode)
end

local function replay_nodes(job)
  local list = {}
  for _, node in ipairs(job.plan.sources) do
    if node.source == "replay" then
      list[#list + 1] = node
    end
  end
  return list
end

---Starts the prepared job (opts, for weir.repl_undo: from, a checkpoint to restore; trace,
---the REPL's trace to go on with; held, whether its replays are paused; clock). Returns the
---clock it runs on, or nil after saying why it did not start.
function M.start_job(opts)
  opts = opts or {}
  if S.job then
    return usage("the job is already running (:stop first)")
  end
  if not S.plan then
    return usage("no job yet: build a pipeline and call env:execute(), then :start")
  end
  session.close_bare()
  S.last = nil
  local job = run.new(S.plan)
  job.restore_from = opts.from -- weir.checkpoint_job restores it before open()
  job.trace = opts.trace or { late = {}, elements = {}, keys = {}, fired = {} }
  S.trace = job.trace
  local has_real = false
  for _, node in ipairs(job.plan.sources) do
    if node.source ~= "manual" and node.source ~= "elements" and node.source ~= "replay"
        and not (node.source == "generate" and node.rate == 0) then
      has_real = true
    end
  end
  local clock = opts.clock or S.clock or (has_real and "real" or "virtual")
  local ok, err = pcall(job.start, job, {
    clock = clock, repl = { interactive = S.interactive, history = S.history } })
  if not ok then
    job:close()
    session.open_bare()
    return report_error(err)
  end
  S.job = job
  S.timeline = require("weir.timeline").attach(job) -- for :draw --svg
  for _, node in ipairs(job.plan.sources) do
    if node.source == "manual" then
      S.manual = node
    end
  end
  -- a replay starts paused: :step, :advance and :run move through its lines
  S.replays = {}
  if clock == "virtual" then
    for _, node in ipairs(replay_nodes(job)) do
      local fh = io.open(node.path, "rb")
      local text = fh and fh:read("*a")
      if fh then
        fh:close()
      end
      local pok, entries = pcall(replay.parse, text or "", node.path)
      S.replays[#S.replays + 1] = { node = node, entries = pok and entries or {},
                                    text = text or "" }
      -- paused before its first line, or (a restore) where the checkpoint left it
      C.weir_replay_hold(job.rt, node.src_id, C.weir_replay_next(job.rt, node.src_id))
    end
    if opts.held == false then
      M.release_replays()
      S.replays = {}
    elseif #S.replays > 0 then
      C.weir_rt_hold_clock(job.rt, 1)
    end
  end
  if opts.from then
    return clock
  end
  say(("started %q on the %s clock at %s"):format(job.plan.job_name, clock,
    status.wm_text(job:now())))
  if #S.replays > 0 then
    local r = S.replays[1]
    say(("%s is paused before its first line (:step, :advance 5s, :run)"):format(
      r.node.label))
  end
  return clock
end

-- Process whatever the runtime has ready now, without waiting for input.
function M.pump()
  local job = S.job
  if not job then
    return
  end
  local ok, err = pcall(M.in_job, function()
    while job.live > 0 do
      local n = C.weir_loop_poll_nowait(job.rt, job.events, job.batch)
      if n < 0 then
        error({ text = ffi.string(C.weir_rt_error(job.rt)) }, 0)
      elseif n == 0 then
        break
      end
      job:handle(n)
    end
  end)
  if not ok then
    return M.job_failed(err)
  end
  if job.live == 0 then
    say("the job's input has ended")
    M.finish_job("ended")
  end
end

-- Replays: each one's next line, held until a command lets it go.
function M.replay_next(r)
  local i = C.weir_replay_next(S.job.rt, r.node.src_id)
  return i, r.entries[i + 1]
end

function M.hold_replays()
  for _, r in ipairs(S.replays) do
    C.weir_replay_hold(S.job.rt, r.node.src_id, (M.replay_next(r)))
  end
end

function M.release_replays()
  for _, r in ipairs(S.replays) do
    C.weir_replay_hold(S.job.rt, r.node.src_id, -1)
  end
end

-- Where the replays stand: "next: line 5 of x.replay at 3000", or nothing when all are read.
function M.replay_position()
  local best
  for _, r in ipairs(S.replays) do
    local _, e = M.replay_next(r)
    if e and (not best or e[1] < best.e[1]) then
      best = { r = r, e = e }
    end
  end
  if best then
    return ("next: line %d of %s at %s"):format(best.e[4], best.r.node.path,
      status.wm_text(best.e[1]))
  end
end

-- The job script (weir repl JOB.lua): run in the prompt's globals; its env:execute() comes to
-- weir.repl.submit, which keeps the plan for :start.
function M.load_script()
  local chunk, err = loadfile(S.script)
  if not chunk then
    error(err, 0)
  end
  setfenv(chunk, S.globals)
  S.loading = true
  local ok, e = pcall(chunk, unpack(S.args))
  S.loading = false
  if not ok then
    error(e, 0)
  end
end

return M
