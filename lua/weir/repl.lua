-- weir.repl: the interactive REPL. Lines come from the C runtime as WEIR_EV_INPUT events on the
-- same loop as the job's sources, ticks and timers, so a job keeps running while you type (on
-- the real clock), or stands still between commands (on the virtual clock, moved by :advance).
local ffi = require("ffi")
local C = require("weir.ffi")
local format = require("weir.format")
local duration = require("weir.duration")
local status = require("weir.status")
local inspect = require("weir.inspect")
local run = require("weir.run")

local M = {}

local EV_INPUT = tonumber(C.WEIR_EV_INPUT)
local INPUT_EOF, INPUT_INTERRUPT = tonumber(C.WEIR_INPUT_EOF), tonumber(C.WEIR_INPUT_INTERRUPT)

local HELP = [[
Lua at the prompt: `weir` and `env` (the job's environment) are there; an expression prints
its value; an unfinished chunk continues on the next line. Build a pipeline, call
env:execute(), then :start. Commands:
  :start            run the job that env:execute() prepared (again, after :stop)
  :stop             stop it (sources stop, what is in flight drains, no end-of-input fire)
  :reset            stop, forget all state, and load the job script again
  :clock virtual|real   the clock for the next :start (virtual: only :advance moves time)
  :advance 5s       move the virtual clock (timers and ticks on the way fire in order)
  :now              the processing time
  :push RECORD      one record into the manual source (env:manual(), or --manual)
  :feed             every line is a record until an empty line
  :end              end the manual source's input: the final watermark fires what is left
  :status           each operator subtask's input watermarks, idleness and valve output
  :windows [key]    open windows: elements, and the time each waits for
  :timers           pending timers per window operator subtask
  :why              for each pending window: what it waits for, which input holds it back
  :late             recent late records and the watermark when they came
  :draw             a timeline of records, windows and the watermark
  :draw --svg FILE  the same as a picture (as weir timeline draws it)
  :help             this text; Ctrl-D leaves, Ctrl-C interrupts a command
]]

local S = {} -- the session

local function say(...)
  io.stdout:write(...)
  io.stdout:write("\n")
end

local function words_for_completion()
  local words = { ":start", ":stop", ":reset", ":clock", ":advance", ":now", ":push", ":feed",
                  ":end",
                  ":status", ":windows", ":timers", ":why", ":late", ":draw", ":help" }
  local function add_fields(prefix, t, sep, depth)
    if depth > 2 or type(t) ~= "table" then
      return
    end
    for k, v in pairs(t) do
      if type(k) == "string" and k:match("^[%a_][%w_]*$") then
        words[#words + 1] = prefix .. sep .. k
        if type(v) == "table" and sep == "." then
          add_fields(prefix .. sep .. k, v, ".", depth + 1)
        end
      end
    end
  end
  for k in pairs(S.globals) do
    if type(k) == "string" then
      words[#words + 1] = k
    end
  end
  for k in pairs(_G) do
    words[#words + 1] = k
  end
  add_fields("weir", require("weir"), ".", 1)
  add_fields("string", string, ".", 2)
  add_fields("table", table, ".", 2)
  add_fields("math", math, ".", 2)
  if S.env then
    add_fields("env", getmetatable(S.env).__index, ":", 2)
  end
  return table.concat(words, "\0")
end

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
    local words = words_for_completion()
    C.weir_repl_set_words(rt(), words, #words)
    C.weir_repl_prompt(rt(), p)
  end
end

local function report_error(err)
  if type(err) == "table" then
    err = err.text or err.msg or tostring(err)
  end
  io.stdout:flush()
  io.stderr:write("weir: ", tostring(err), "\n")
  io.stderr:flush()
end

-- Job control -----------------------------------------------------------------------------

local function finish_job(stopping)
  local job = S.job
  if not job then
    return
  end
  local ok, err = pcall(function()
    if stopping then
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
  job:close()
  S.job = nil
  open_bare()
  if not ok then
    report_error(err)
  end
end

local function start_job()
  if S.job then
    return say("the job is already running (:stop first)")
  end
  if not S.plan then
    return say("no job yet: build a pipeline and call env:execute(), then :start")
  end
  close_bare()
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
  say(("started %q on the %s clock at %s"):format(job.plan.job_name, clock,
    status.wm_text(job:now())))
end

-- Process whatever the runtime has ready now, without waiting for input.
local function pump()
  local job = S.job
  if not job then
    return
  end
  while job.live > 0 do
    local n = C.weir_loop_poll_nowait(job.rt, job.events, job.batch)
    if n < 0 then
      error({ text = ffi.string(C.weir_rt_error(job.rt)) }, 0)
    elseif n == 0 then
      break
    end
    job:handle(n)
  end
  if job.live == 0 then
    say("the job's input has ended")
    finish_job(false)
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
    return say("no job is running")
  end
  finish_job(true)
  say("stopped")
end

function commands.reset()
  if S.job then
    finish_job(true)
  end
  S.manual, S.trace = nil, nil
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
    return say(":clock virtual|real")
  end
  if S.job then
    return say("the clock is chosen at :start (:stop first)")
  end
  S.clock = arg
  say("the next :start uses the " .. arg .. " clock")
end

local function need_job()
  if not S.job then
    say("no job is running (:start)")
    return nil
  end
  return S.job
end

function commands.now()
  local job = S.job
  say(status.wm_text(job and job:now() or C.weir_rt_now(rt())))
end

function commands.advance(arg)
  local job = need_job()
  if not job then
    return
  end
  local ok, d = pcall(duration.parse, arg, ":advance")
  if not ok or d < 0 then
    return say(":advance needs a duration such as 5s")
  end
  if job:now() + d > duration.MAX_TIME then
    return say(":advance: the virtual clock goes up to 2^52 ms (API.md, Time range)")
  end
  if C.weir_rt_advance(job.rt, job:now() + d) < 0 then
    return say(":advance moves the virtual clock; this job runs on the real clock")
  end
  pump()
  if S.job then
    say("now " .. status.wm_text(S.job:now()))
  end
end

local function push(text)
  local job = need_job()
  if not job then
    return
  end
  if not S.manual then
    return say("the job has no manual source (use env:manual(), or weir repl JOB.lua --manual)")
  end
  C.weir_manual_push(job.rt, S.manual.src_id, text, #text)
  pump()
end

commands.push = push

commands["end"] = function()
  local job = need_job()
  if not job then
    return
  end
  if not S.manual then
    return say("the job has no manual source")
  end
  C.weir_manual_close(job.rt, S.manual.src_id)
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
  local job = need_job()
  if job then
    inspect.status(job, say)
  end
end

function commands.windows(key)
  local job = need_job()
  if job then
    inspect.windows(job, key, say)
  end
end

function commands.timers()
  local job = need_job()
  if job then
    inspect.timers(job, say)
  end
end

function commands.why()
  local job = need_job()
  if job then
    inspect.why(job, say)
  end
end

function commands.late()
  inspect.late(S.trace, say)
end

function commands.draw(arg)
  if arg and arg:match("^%-%-svg") then
    return say(require("weir.timeline").draw_command(S.timeline, arg))
  end
  inspect.draw(S.job, S.trace, S.colour, say)
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
  -- Ctrl-C while a command runs: the C side sets a flag; a count hook checks it. LuaJIT runs no
  -- hooks in compiled code, so the chunk itself stays interpreted (functions it defines still
  -- compile); a compiled loop elsewhere is left by a third Ctrl-C, which exits.
  jit.off(f)
  debug.sethook(function()
    if C.weir_repl_interrupted(rt()) == 1 then
      error("interrupted", 2)
    end
  end, "", 10000)
  local res = { pcall(f) }
  debug.sethook()
  if not res[1] then
    report_error(res[2])
    return
  end
  show_results(#res - 1, unpack(res, 2))
end

local function eval(line)
  local buf = S.buffer and (S.buffer .. "\n" .. line) or line
  local f, err = loadstring("return " .. buf, "=stdin")
  local incomplete = not f and err:find("<eof>", 1, true)
  if not f then
    f, err = loadstring(buf, "=stdin")
    incomplete = incomplete or (not f and err:find("<eof>", 1, true))
  end
  if not f then
    if incomplete then
      S.buffer = buf
      prompt(">> ")
      return
    end
    S.buffer = nil
    prompt("> ")
    return report_error(err)
  end
  S.buffer = nil
  setfenv(f, S.globals)
  run_chunk(f)
  pump()
  prompt("> ")
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
    local cmd, arg = line:match("^:(%a+)%s*(.-)%s*$")
    if cmd then
      local f = commands[cmd]
      if not f then
        say(("unknown command :%s (:help)"):format(cmd))
      else
        local ok, err = pcall(f, arg)
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
    return say("a job is running; :stop it before executing another")
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

---The REPL: returns the exit status.
function M.run(job)
  S.interactive = job.interactive
  S.colour = job.interactive and os.getenv("NO_COLOR") == nil
  S.script, S.args = job.script, job.args or {}
  -- Without HOME no history file: never one in the working directory (or at /).
  local home = os.getenv("HOME")
  S.history = home and home ~= "" and home .. "/.weir_history" or nil
  S.globals = setmetatable({ weir = require("weir") }, { __index = _G })
  open_bare()
  if S.script then
    local ok, err = pcall(M.load_script)
    if not ok then
      report_error(err)
      close_bare()
      return 1
    end
    if S.plan then
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
  local status_code = 0
  while true do
    local r = rt()
    local events = S.job and S.job.events or S.events
    local n = C.weir_loop_poll(r, events, S.job and S.job.batch or 1)
    if n < 0 then
      report_error(ffi.string(C.weir_rt_error(r)))
      if S.job then
        S.job:close()
        S.job = nil
        open_bare()
      else
        status_code = 1
        break
      end
    elseif n == 1 and events[0].kind == EV_INPUT then
      local e = events[0]
      if e.flags == INPUT_EOF then
        break
      elseif e.flags == INPUT_INTERRUPT then
        S.buffer, S.feeding = nil, false
        prompt("> ")
      else
        handle_line(ffi.string(e.ptr, e.len))
      end
    elseif n > 0 and S.job then
      local ok, err = pcall(S.job.handle, S.job, n)
      if not ok then
        report_error(err)
        finish_job(false)
      elseif S.job and S.job.live == 0 then
        say("the job's input has ended")
        finish_job(false)
      end
    end
  end
  if S.job then
    finish_job(true)
  end
  close_bare()
  if S.interactive then
    io.stdout:write("\n")
  end
  return status_code
end

S.events = ffi.new("weir_event_t[1]")

return M
