-- weir.repl: the interactive REPL's session loop. Lines come from the C runtime as
-- WEIR_EV_INPUT events on the same loop as the job's sources, ticks and timers, so a job keeps
-- running while you type (on the real clock), or stands still between commands (on the virtual
-- clock, moved by :advance). This module owns that loop, the Lua typed at the prompt (an
-- expression prints its value, an unfinished chunk continues) and the dispatch of a line to a
-- command (weir.repl_commands), and env:execute()'s plan in REPL mode. The session's state is
-- weir.repl_session's, the job's control and the Ctrl-C/SIGTERM hook weir.repl_job's: LuaJIT's
-- compiler is off for the whole session, so that the count hook can stop any loop, in the
-- job's functions too (compiled code runs no hooks).
local ffi = require("ffi")
local C = require("weir.ffi")
local format = require("weir.format")
local session = require("weir.repl_session")
local job_ctl = require("weir.repl_job")
local cmds = require("weir.repl_commands")
local undo = require("weir.repl_undo")

local S, say, rt, prompt = session.S, session.say, session.rt, session.prompt
local report_error, usage = session.report_error, session.usage
local in_job, finish_job, pump = job_ctl.in_job, job_ctl.finish_job, job_ctl.pump

local M = {}

local EV_INPUT = tonumber(C.WEIR_EV_INPUT)
local INPUT_EOF, INPUT_INTERRUPT = tonumber(C.WEIR_INPUT_EOF), tonumber(C.WEIR_INPUT_INTERRUPT)

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
  undo.after_line(buf)
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

-- The end of a :feed (an empty line, Ctrl-C): the whole :feed is one step back (a snapshot
-- per record would cost a paste of n records n snapshots of a growing state).
local function feed_done()
  S.feeding = false
  undo.after_line((":feed (%d record%s)"):format(S.fed, S.fed == 1 and "" or "s"))
end

local function handle_line(line)
  if S.feeding then
    if line == "" then
      feed_done()
      prompt("> ")
    else
      S.fed = S.fed + 1
      cmds.push(line)
    end
    return
  end
  if not S.buffer then
    local cmd, arg = line:match("^%s*:(%a+)%s*(.-)%s*$")
    if cmd then
      local f = cmds.commands[cmd]
      if not f then
        report_error(("unknown command :%s (:help lists them)"):format(cmd))
      else
        local a = strip_comment(arg)
        local ok, err = pcall(f, a)
        if not ok then
          report_error(err)
        end
        -- a step back for :undo, if the job's state changed
        undo.after_line(":" .. cmd .. (a ~= "" and (" " .. a) or ""), cmd)
      end
      if S.feeding then
        S.fed = 0
      else
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
  S.command_names = cmds.NAMES
  -- Without HOME no history file: never one in the working directory (or at /).
  local home = os.getenv("HOME")
  S.history = home and home ~= "" and home .. "/.weir_history" or nil
  S.globals = setmetatable({ weir = require("weir") }, { __index = _G })
  -- interpreted code runs hooks: every loop can be stopped (API.md, The REPL)
  jit.off()
  jit.flush()
  debug.sethook(job_ctl.on_hook, "", job_ctl.HOOK_COUNT)
  session.open_bare()
  if S.script then
    local ok, err = pcall(job_ctl.load_script)
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
        session.open_bare()
      else
        break
      end
    elseif n == 1 and events[0].kind == EV_INPUT then
      local e = events[0]
      if e.flags == INPUT_EOF then
        leave()
        break
      elseif e.flags == INPUT_INTERRUPT then
        if S.feeding then
          feed_done()
        end
        S.buffer = nil
        prompt("> ")
      else
        handle_line(ffi.string(e.ptr, e.len))
      end
    elseif n > 0 and S.job then
      S.background, S.waited = 1, 0
      local ok, err = pcall(in_job, S.job.handle, S.job, n)
      S.background = 0
      if not ok then
        job_ctl.job_failed(err)
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
  session.close_bare()
  if S.interactive then
    io.stdout:write("\n")
  end
  return S.exit or ((S.failed and not S.interactive) and 1 or 0)
end

return M
