-- weir.repl: the interactive REPL. Lines come from the C runtime as WEIR_EV_INPUT events on the
-- same loop as the job's sources, ticks and timers, so a job keeps running while you type (on
-- the real clock), or stands still between commands (on the virtual clock, moved by :advance).
-- LuaJIT's compiler is off for the whole session: a count hook can then stop any loop, in the
-- job's functions too, when Ctrl-C or SIGTERM comes (compiled code runs no hooks).
local ffi = require("ffi")
local C = require("weir.ffi")
local format = require("weir.format")
local duration = require("weir.duration")
local replay = require("weir.replay")
local status = require("weir.status")
local inspect = require("weir.inspect")
local run = require("weir.run")
local repl_words = require("weir.repl_words")

local M = {}

local EV_INPUT = tonumber(C.WEIR_EV_INPUT)
local INPUT_EOF, INPUT_INTERRUPT = tonumber(C.WEIR_INPUT_EOF), tonumber(C.WEIR_INPUT_INTERRUPT)
local HOOK_COUNT = 10000 -- VM instructions between two looks at the signal flags
-- A Ctrl-C while the job runs between keystrokes (a live job's records, not a command) most
-- likely meant the line being typed: the job's code is stopped only if it is still running
-- this many hook calls (5e7 instructions, about a tenth of a second) later.
local BACKGROUND_HOOKS = 5000

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
  :help           this text; Ctrl-D leaves, Ctrl-C interrupts (the job too)
After a job ends (or fails, or is interrupted) the inspectors show its final
state.
]]

local COMMANDS = { ":start", ":stop", ":reset", ":clock", ":advance", ":step", ":run", ":now",
                   ":push", ":feed", ":end", ":status", ":windows", ":timers", ":why", ":late",
                   ":draw", ":help" }

local S = {} -- the session

local function say(...)
  io.stdout:write(...)
  io.stdout:write("\n")
end

-- The runtime ----------------------------------------------------------------------------------

-- The runtime the REPL reads from: the running job's, or a bare one between jobs.
local function rt()
  return S.job and S.job.rt or S.bare
end

local function open_bare()
  S.bare = C.weir_rt_new(C.WEIR_CLOCK_VIRTUAL, 0)
  if C.weir_repl_open(S.bare, S.interactive and 1 or 0, S.history) < 0
      or C.weir_rt_start(S.bare) < 0 then
    error("weir: repl: " .. ffi.string(C.weir_rt_error(S.bare)), 0)
  end
end

local function close_bare()
  if S.bare ~= nil then
    C.weir_rt_free(S.bare)
    S.bare = nil
  end
end

local function prompt(p)
  S.prompt = p
  if S.interactive then
    local words = repl_words.words(COMMANDS, S.globals)
    C.weir_repl_set_words(rt(), words, #words)
    C.weir_repl_prompt(rt(), p)
  end
end

-- An error: on stderr, and a session read from a file or pipe then exits 1.
local function report_error(err)
  if type(err) == "table" then
    err = err.text or err.msg or tostring(err)
  end
  S.failed = true
  if S.echoed then
    S.echoed = false
    io.stdout:write("\n") -- below the ^C the terminal echoed
  end
  io.stdout:flush()
  io.stderr:write("weir: ", tostring(err), "\n")
  io.stderr:flush()
end

-- A command used wrongly: its usage on stdout, and it counts as an error.
local function usage(text)
  S.failed = true
  say(text)
end

-- Interrupts ---------------------------------------------------------------------------------

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
local function on_hook()
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
local function in_job(f, ...)
  S.in_job = S.in_job + 1
  local res = { pcall(f, ...) }
  S.in_job = S.in_job - 1
  if not res[1] then
    error(res[2], 0)
  end
  return unpack(res, 2, table.maxn(res))
end

-- Job control -----------------------------------------------------------------------------

local HOW = { ended = "has ended", stopped = "was stopped", failed = "failed",
              interrupted = "was interrupted", terminated = "was terminated" }

-- The job ended (how: "ended", "stopped", "failed", "interrupted"): it is kept, so that the
-- inspectors show its final state, until the next :start or :reset.
local function keep(job, how)
  job.now_override = job.rt ~= nil and job:now() or job.now_override
  job:close()
  S.job, S.manual = nil, nil
  S.last = { job = job, how = how }
  open_bare()
  prompt(S.prompt or "> ") -- the new runtime's input shows it (the job may end between lines)
end

-- The job failed with err (raised by its code, or a signal): says so, keeps it.
local function job_failed(err)
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
local function finish_job(mode)
  local job = S.job
  if not job then
    return
  end
  local ok, err = pcall(in_job, function()
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
    return job_failed(err)
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

local function start_job()
  if S.job then
    return usage("the job is already running (:stop first)")
  end
  if not S.plan then
    return usage("no job yet: build a pipeline and call env:execute(), then :start")
  end
  close_bare()
  S.last = nil
  local job = run.new(S.plan)
  job.trace = { late = {}, elements = {}, keys = {}, fired = {} }
  S.trace = job.trace
  local has_real = false
  for _, node in ipairs(job.plan.sources) do
    if node.source ~= "manual" and node.source ~= "elements" and node.source ~= "replay"
        and not (node.source == "generate" and node.rate == 0) then
      has_real = true
    end
  end
  local clock = S.clock or (has_real and "real" or "virtual")
  local ok, err = pcall(job.start, job, {
    clock = clock, repl = { interactive = S.interactive, history = S.history } })
  if not ok then
    job:close()
    open_bare()
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
      C.weir_replay_hold(job.rt, node.src_id, 0)
    end
    if #S.replays > 0 then
      C.weir_rt_hold_clock(job.rt, 1)
    end
  end
  say(("started %q on the %s clock at %s"):format(job.plan.job_name, clock,
    status.wm_text(job:now())))
  if #S.replays > 0 then
    local r = S.replays[1]
    say(("%s is paused before its first line (:step, :advance 5s, :run)"):format(
      r.node.label))
  end
end

-- Process whatever the runtime has ready now, without waiting for input.
local function pump()
  local job = S.job
  if not job then
    return
  end
  local ok, err = pcall(in_job, function()
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
    return job_failed(err)
  end
  if job.live == 0 then
    say("the job's input has ended")
    finish_job("ended")
  end
end

-- Replays: each one's next line, held until a command lets it go.
local function replay_next(r)
  local i = C.weir_replay_next(S.job.rt, r.node.src_id)
  return i, r.entries[i + 1]
end

local function hold_replays()
  for _, r in ipairs(S.replays) do
    C.weir_replay_hold(S.job.rt, r.node.src_id, (replay_next(r)))
  end
end

local function release_replays()
  for _, r in ipairs(S.replays) do
    C.weir_replay_hold(S.job.rt, r.node.src_id, -1)
  end
end

-- Where the replays stand: "next: line 5 of x.replay at 3000", or nothing when all are read.
local function replay_position()
  local best
  for _, r in ipairs(S.replays) do
    local _, e = replay_next(r)
    if e and (not best or e[1] < best.e[1]) then
      best = { r = r, e = e }
    end
  end
  if best then
    return ("next: line %d of %s at %s"):format(best.e[4], best.r.node.path,
      status.wm_text(best.e[1]))
  end
end

-- Commands --------------------------------------------------------------------------------

local commands = {}

function commands.help()
  io.stdout:write(HELP)
end

function commands.start()
  start_job()
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
  if S.script then
    S.plan = nil
    local ok, err = pcall(M.load_script)
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
    usage(S.last and ("the job %s (:start runs it again)"):format(HOW[S.last.how])
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
    say(("(the job %s; its state at the end:)"):format(HOW[S.last.how]))
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
  release_replays()
  pump()
  if S.job then
    hold_replays()
    local where = replay_position()
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
    local i, e = replay_next(r)
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
  release_replays()
  C.weir_rt_hold_clock(job.rt, 0)
  S.replays = {}
  pump()
end

local function push(text)
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
  push(arg)
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
    local i = replay_next(r)
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
  prompt("feed> ")
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

-- Lua at the prompt -------------------------------------------------------------------------

local function show_results(n, ...)
  if n == 0 then
    return
  end
  local parts = {}
  for i = 1, n do
    local v = select(i, ...)
    parts[i] = type(v) == "string" and v or format.value(v)
  end
  say(table.concat(parts, "\t"))
end

local function run_chunk(f)
  local res = { pcall(f) }
  if not res[1] then
    if type(res[2]) == "table" and res[2].repl_signal then
      res[2] = res[2].text -- the job's code, called from the prompt
    end
    report_error(res[2])
    return
  end
  show_results(table.maxn(res) - 1, unpack(res, 2, table.maxn(res)))
end

-- Compiles the chunk typed so far: a function, or nil and the error, or nil, nil, true when
-- it is unfinished. As lua.c: an expression prints its values; only a statement whose error
-- ends in '<eof>' goes on on the next line.
local function compile(buf)
  if loadstring("return " .. buf, "=stdin") then
    -- not `return f(x)`: that tail call would drop the chunk's frame, and with it the
    -- position error("boom") reports (stdin:1:)
    local f = loadstring("return select(1, " .. buf .. "\n)", "=stdin")
    if f then
      return f
    end
    return loadstring("return " .. buf, "=stdin")
  end
  local f, err = loadstring(buf, "=stdin")
  if f then
    return f
  end
  if err:sub(-7) == "'<eof>'" then
    return nil, nil, true
  end
  return nil, err
end

local function eval(line)
  local buf = S.buffer and (S.buffer .. "\n" .. line) or line
  local f, err, unfinished = compile(buf)
  if unfinished then
    S.buffer = buf
    prompt(">> ")
    return
  end
  S.buffer = nil
  if not f then
    prompt("> ")
    return report_error(err)
  end
  setfenv(f, S.globals)
  run_chunk(f)
  pump()
  prompt("> ")
end

-- "-- a comment" after a command: the command's argument ends before it (a "--" then a space
-- or the end; "--svg" is an option).
local function strip_comment(arg)
  local at = (" " .. arg .. " "):find("%s%-%-%s")
  if at then
    arg = at == 1 and "" or arg:sub(1, at - 2):match("^(.-)%s*$")
  end
  return arg
end

local function handle_line(line)
  if S.feeding then
    if line == "" then
      S.feeding = false
      prompt("> ")
    else
      push(line)
    end
    return
  end
  if not S.buffer then
    local cmd, arg = line:match("^%s*:(%a+)%s*(.-)%s*$")
    if cmd then
      local f = commands[cmd]
      if not f then
        report_error(("unknown command :%s (:help lists them)"):format(cmd))
      else
        local ok, err = pcall(f, strip_comment(arg))
        if not ok then
          report_error(err)
        end
      end
      if not S.feeding then
        prompt("> ")
      end
      return
    end
    if line:match("^%s*$") then
      return prompt("> ")
    end
  end
  eval(line)
end

-- The session ------------------------------------------------------------------------------

---Called by env:execute() in REPL mode: the job waits for :start.
function M.submit(plan)
  if S.job then
    return usage("a job is running; :stop it before executing another")
  end
  S.plan = plan
  S.env = plan.env
  S.globals.env = plan.env
  if not S.loading then
    say(("job %q is ready: :start runs it"):format(plan.job_name))
  end
end

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

-- What Ctrl-D (the end of the input) drops: the running job stops, nothing fires.
local function leave()
  if S.buffer then
    report_error("the input ended inside an unfinished chunk:\n  " ..
      S.buffer:gsub("\n", "\n  "))
  end
  if S.job then
    local m = S.job:metrics()
    local held = 0
    for _, node in ipairs(S.job.timer_nodes) do
      held = held + (m[node.label] and m[node.label].open_windows or 0)
    end
    if held > 0 then
      -- the stop then names each window operator's dropped windows (API.md, Signals)
      say(("leaving: job %q stops with %d open window(s), which do not fire (:end before "
        .. "leaving fires them)"):format(S.job.plan.job_name, held))
    end
    finish_job("stopped")
  end
end

---The REPL: returns the exit status.
function M.run(job)
  S.interactive = job.interactive
  S.colour = job.interactive and os.getenv("NO_COLOR") == nil
  S.script, S.args = job.script, job.args or {}
  S.in_job, S.background, S.waited, S.failed, S.replays = 0, 0, 0, false, {}
  -- Without HOME no history file: never one in the working directory (or at /).
  local home = os.getenv("HOME")
  S.history = home and home ~= "" and home .. "/.weir_history" or nil
  S.globals = setmetatable({ weir = require("weir") }, { __index = _G })
  -- interpreted code runs hooks: every loop can be stopped (API.md, The REPL)
  jit.off()
  jit.flush()
  debug.sethook(on_hook, "", HOOK_COUNT)
  open_bare()
  if S.script then
    local ok, err = pcall(M.load_script)
    if not ok then
      report_error(err)
      S.globals.env = S.globals.env or require("weir").env()
      S.env = S.globals.env
      say(("the prompt runs without the job: fix %s, then :reset"):format(S.script))
    elseif S.plan then
      say(("loaded %s: job %q is ready (:start runs it, :help for more)"):format(S.script,
        S.plan.job_name))
    end
  else
    S.globals.env = require("weir").env()
    S.env = S.globals.env
    if S.interactive then
      say("weir " .. ffi.string(C.weir_version()) .. " repl (:help for commands, Ctrl-D leaves)")
    end
  end
  prompt("> ")
  while true do
    local r = rt()
    local events = S.job and S.job.events or S.events
    local n = C.weir_loop_poll(r, events, S.job and S.job.batch or 1)
    local stop = C.weir_repl_stop_asked(r) ~= 0 -- SIGTERM: this poll brought the STOP
    if n < 0 then
      report_error(ffi.string(C.weir_rt_error(r)))
      if S.job then
        S.job:close()
        S.job = nil
        open_bare()
      else
        break
      end
    elseif n == 1 and events[0].kind == EV_INPUT then
      local e = events[0]
      if e.flags == INPUT_EOF then
        leave()
        break
      elseif e.flags == INPUT_INTERRUPT then
        S.buffer, S.feeding = nil, false
        prompt("> ")
      else
        handle_line(ffi.string(e.ptr, e.len))
      end
    elseif n > 0 and S.job then
      S.background, S.waited = 1, 0
      local ok, err = pcall(in_job, S.job.handle, S.job, n)
      S.background = 0
      if not ok then
        job_failed(err)
      elseif S.job and S.job.live == 0 then
        say(S.job.stopped and "the job is stopped" or "the job's input has ended")
        finish_job(S.job.stopped and "stopped" or "ended")
      end
    end
    if stop or S.terminating then
      if not S.terminating then
        say(S.job and "stopped by a signal: the job stops, the session ends"
          or "stopped by a signal: the session ends")
      end
      break
    end
  end
  if S.job then
    finish_job("stopped")
  end
  debug.sethook()
  close_bare()
  if S.interactive then
    io.stdout:write("\n")
  end
  return S.exit or ((S.failed and not S.interactive) and 1 or 0)
end

S.events = ffi.new("weir_event_t[1]")

return M
