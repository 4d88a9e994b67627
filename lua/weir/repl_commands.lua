-- weir.repl_commands: the REPL's `:` commands (their help text, the names completion offers,
-- the table handle_line calls): job control (:start, :stop, :reset, :clock, :end), the virtual
-- clock and paused replays (:now, :advance, :step, :run), input (:push, :feed) and the
-- inspectors (:status, :windows, :timers, :why, :late, :draw, from weir.inspect), which read
-- the running job or the one that ended, as it was then.
local C = require("weir.ffi")
local duration = require("weir.duration")
local status = require("weir.status")
local inspect = require("weir.inspect")
local session = require("weir.repl_session")
local job_ctl = require("weir.repl_job")
local undo = require("weir.repl_undo")

local S, say, rt = session.S, session.say, session.rt
local report_error, usage = session.report_error, session.usage
local pump, finish_job = job_ctl.pump, job_ctl.finish_job

local M = {}

local HELP = [[
Lua at the prompt: `weir` and `env` (the job's environment) are there; an
expression prints its value; an unfinished chunk continues on the next line.
Build a pipeline, call env:execute(), then :start. Commands (`--` starts a
comment after one):
  :start          run the job env:execute() prepared (again, after it ended)
  :stop           stop it (what is in flight drains; no end-of-input fire)
  :reset          stop, forget all state, and load the job script again
  :clock virtual|real   the clock for the next :start
  :advance 5s     move the virtual clock (timers, ticks, replay lines on the
                  way fire in order)
  :step           deliver the next line of a replay (a replay starts paused)
  :run            let a replay run to its end
  :now            the processing time
  :push RECORD    one record into the manual source (env:manual(), --manual)
  :feed           every line is a record until an empty line
  :end            end the input (manual, replay): the final watermark fires
  :status         each operator subtask's input watermarks, idleness, valve
  :windows [key]  open windows: elements, and the time each waits for
  :timers         pending timers per window operator subtask
  :why            per pending window: what it waits for, what holds it back
  :late           recent late records and the watermark when they came
  :draw           a timeline of records, windows and the watermark
  :draw --svg FILE  the same as a picture (as weir timeline draws it)
  :undo [N]       back N commands that changed the job (1 when left out)
  :checkpoint     keep the job's state now; :restore N goes back to it
  :savepoint DIR  write the state now as a savepoint in DIR (weir run
                  --restore and :restore read it)
  :restore PATH   go on from a checkpoint or savepoint on disk
  :help           this text; Ctrl-D leaves, Ctrl-C interrupts (the job too)
After a job ends (or fails, or is interrupted) the inspectors show its final
state.
]]

M.HELP = HELP

-- What Tab completes at the start of a line.
M.NAMES = { ":start", ":stop", ":reset", ":clock", ":advance", ":step", ":run", ":now",
            ":push", ":feed", ":end", ":status", ":windows", ":timers", ":why", ":late",
            ":draw", ":undo", ":checkpoint", ":savepoint", ":restore", ":help" }

local commands = {} -- name (without the colon) -> function(arg)
M.commands = commands

function commands.help()
  io.stdout:write(HELP)
end

function commands.start()
  local clock = job_ctl.start_job()
  if clock then
    undo.started(S.job, clock) -- a new history (weir.repl_undo)
  end
  pump()
end

function commands.stop()
  if not S.job then
    return usage("no job is running")
  end
  finish_job("stopped")
  say("stopped")
end

function commands.reset()
  if S.job then
    finish_job("stopped")
  end
  S.manual, S.trace, S.last = nil, nil, nil
  undo.forget()
  if S.script then
    S.plan = nil
    local ok, err = pcall(job_ctl.load_script)
    if not ok then
      return report_error(err)
    end
    say(("reloaded %s"):format(S.script))
  else
    say("reset: :start runs the job again from a clean state")
  end
end

function commands.clock(arg)
  if arg ~= "virtual" and arg ~= "real" then
    return usage(":clock virtual|real")
  end
  if S.job then
    return usage("the clock is chosen at :start (:stop first)")
  end
  S.clock = arg
  say("the next :start uses the " .. arg .. " clock")
end

local function need_job()
  if not S.job then
    usage(S.last and ("the job %s (:start runs it again)"):format(job_ctl.HOW[S.last.how])
      or "no job is running (:start)")
    return nil
  end
  return S.job
end

-- The job the inspectors read: the running one, or the one that ended, as it was then.
local function inspected()
  if S.job then
    return S.job
  end
  if S.last then
    say(("(the job %s; its state at the end:)"):format(job_ctl.HOW[S.last.how]))
    return S.last.job
  end
  usage("no job is running (:start)")
end

function commands.now()
  local job = S.job or (S.last and S.last.job)
  say(status.wm_text(job and job:now() or C.weir_rt_now(rt())))
end

function commands.advance(arg)
  local job = need_job()
  if not job then
    return
  end
  local ok, d = pcall(duration.parse, arg, ":advance")
  if not ok or d < 0 then
    return usage(":advance needs a duration such as 5s")
  end
  if job:now() + d > duration.MAX_TIME then
    return usage(":advance: the virtual clock goes up to 2^52 ms (API.md, Time range)")
  end
  if C.weir_rt_advance(job.rt, job:now() + d) < 0 then
    return usage(":advance moves the virtual clock; this job runs on the real clock")
  end
  job_ctl.release_replays()
  pump()
  if S.job then
    job_ctl.hold_replays()
    local where = job_ctl.replay_position()
    say("now " .. status.wm_text(S.job:now()) .. (where and ("; " .. where) or ""))
  end
end

function commands.step()
  local job = need_job()
  if not job then
    return
  end
  local best
  for _, r in ipairs(S.replays) do
    local i, e = job_ctl.replay_next(r)
    if e and (not best or e[1] < best.e[1]) then
      best = { r = r, i = i, e = e }
    end
  end
  if not best then
    return usage("the job has no replay line left to step to")
  end
  local e = best.e
  local text = e[3] >= 0 and best.r.text:sub(e[2] + 1, e[2] + e[3]) or "(only moves the clock)"
  say(("line %d of %s at %s: %s"):format(e[4], best.r.node.path, status.wm_text(e[1]), text))
  C.weir_replay_hold(job.rt, best.r.node.src_id, best.i + 1)
  if e[1] > job:now() then
    C.weir_rt_advance(job.rt, e[1])
  end
  pump()
end

commands.run = function()
  local job = need_job()
  if not job then
    return
  end
  if #S.replays == 0 then
    return usage(":run lets a replay run to its end; this job has no replay")
  end
  job_ctl.release_replays()
  C.weir_rt_hold_clock(job.rt, 0)
  S.replays = {}
  pump()
end

function M.push(text)
  local job = need_job()
  if not job then
    return
  end
  if not S.manual then
    return usage("the job has no manual source (use env:manual(), or weir repl JOB.lua --manual)")
  end
  C.weir_manual_push(job.rt, S.manual.src_id, text, #text)
  pump()
end

function commands.push(arg)
  if arg == "" then
    return usage(":push RECORD (a line of text; :feed for many)")
  end
  M.push(arg)
end

commands["end"] = function()
  local job = need_job()
  if not job then
    return
  end
  if not S.manual and #S.replays == 0 then
    return usage("the job has no manual source or replay to end")
  end
  if S.manual then
    C.weir_manual_close(job.rt, S.manual.src_id)
  end
  for _, r in ipairs(S.replays) do
    local i = job_ctl.replay_next(r)
    if i < #r.entries then
      say(("%s: the input ends before line %d (%d line(s) not read)"):format(r.node.label,
        r.entries[i + 1][4], #r.entries - i))
    end
    C.weir_replay_end(job.rt, r.node.src_id)
  end
  pump()
end

function commands.feed()
  if not need_job() then
    return
  end
  S.feeding = true
  say("every line is a record; an empty line ends :feed")
  session.prompt("feed> ")
end

function commands.status()
  local job = inspected()
  if job then
    inspect.status(job, say)
  end
end

function commands.windows(key)
  local job = inspected()
  if job then
    inspect.windows(job, key, say)
  end
end

function commands.timers()
  local job = inspected()
  if job then
    inspect.timers(job, say)
  end
end

function commands.why()
  local job = inspected()
  if job then
    inspect.why(job, say)
  end
end

function commands.late()
  if not S.trace then
    return usage("no job is running (:start)")
  end
  inspect.late(S.trace, say)
end

function commands.draw(arg)
  if arg and arg:match("^%-%-svg") then
    return say(require("weir.timeline").draw_command(S.timeline, arg))
  end
  local job = inspected()
  if job then
    inspect.draw(job, S.trace, S.colour, say)
  end
end

commands.undo = undo.undo
commands.checkpoint = undo.checkpoint
commands.savepoint = undo.savepoint
commands.restore = undo.restore

return M
