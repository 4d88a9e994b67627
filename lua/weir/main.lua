-- weir.main: runs a job script for `weir run`, `explain`, `repl` and `timeline` (`weir sweep`:
-- weir.sweep); returns the exit status.
local env = require("weir.env")
local memory = require("weir.memory")
local param = require("weir.param")

local M = {}

local function say(text)
  io.stdout:flush()
  io.stderr:write("weir: ", text, "\n")
end

---@param job table {mode, script, parallelism, replay, args}
---@return integer exit status: 0 ok, 1 the job failed, 2 usage error
function M.run(job)
  package.loaded["weir._job"] = job
  if job.script and job.script_dir then
    -- the job's own modules first: require("mymod") finds mymod.lua next to the job from any
    -- working directory (API.md, Running jobs)
    local d = job.script_dir
    package.path = d .. "/?.lua;" .. d .. "/?/init.lua;" .. package.path
    package.cpath = d .. "/?.so;" .. package.cpath
  end
  if job.max_memory then
    -- from here on, so building the job counts too (cli.c checked the size)
    memory.set_limit(memory.parse(job.max_memory), "--max-memory " .. job.max_memory)
    local why, figures = memory.check()
    if why then
      say(memory.failure_text(why, figures) .. "\n  (weir needs this much to start)")
      return 1
    end
  end
  if job.jit_verbose then
    -- LuaJIT's own trace log (jit/v.lua, from libluajit-5.1-common) on stderr
    local ok, v = pcall(require, "jit.v")
    if not ok then
      say("--jit-verbose: LuaJIT's jit.v module is not installed (package libluajit-5.1-common)")
      return 1
    end
    v.on() -- stderr
  end
  if job.mode == "checkpoint" then
    return require("weir.checkpoint_cli").run(job.args[1], job.args[2])
  end
  if job.mode == "sweep" then
    return require("weir.sweep").run(job, say)
  end
  local perr = param.set(job.params)
  if perr then
    say(perr)
    return 2
  end
  if job.progress and job.stderr_tty and job.mode == "run" then
    -- Lua's print from user code erases the --progress line first, as the print sinks do
    local C = require("weir.ffi")
    local lua_print = print
    print = function(...) -- luacheck: ignore 121
      C.weir_out_clear_status()
      return lua_print(...)
    end
  end
  if job.mode == "repl" then
    local ok, code = xpcall(require("weir.repl").run, debug.traceback, job)
    if not ok then
      say(tostring(code))
      return 1
    end
    return code
  end
  -- the environments the script made, for the warning below; one that executed is dropped at
  -- the next env.new (a script that runs jobs in a loop would otherwise keep every job's graph)
  local created = {}
  local new = env.new
  env.new = function(...)
    local e = new(...)
    local n = 0
    for i = 1, #created do
      local x = created[i]
      created[i] = nil
      if not x.executed then
        n = n + 1
        created[n] = x
      end
    end
    created[n + 1] = e
    return e
  end
  local chunk, err = loadfile(job.script)
  if not chunk then
    say(err)
    return 1
  end
  local args = job.args or {}
  local ok, e = xpcall(chunk, function(msg)
    if type(msg) == "table" then
      return msg
    end
    -- a method called with a dot (env.from_elements(...)) is named as that, at the user's line
    msg = require("weir.mistakes").dot_call(msg) or msg
    -- the message names the script line; WEIR_DEBUG=1 adds the whole traceback
    return { text = tostring(msg), traceback = debug.traceback(tostring(msg), 2) }
  end, unpack(args))
  env.new = new
  if ok then
    ok, e = pcall(param.check, job.mode) -- a script that never called env:execute()
  end
  if not ok then
    local why, figures = nil, nil
    if not (type(e) == "table" and e.memory) then
      local _
      _, why, figures = pcall(memory.check) -- a refusal while the script built its job
      if type(why) ~= "number" then
        why = nil
      end
    end
    if why then
      say(memory.failure_text(why, figures))
      return 1
    elseif type(e) ~= "table" then
      say(tostring(e)) -- "not enough memory": the handler does not run for it
      return 1
    elseif e.weir_job_error then
      say(e.text)
      return 1
    elseif e.usage then
      say(e.msg)
      return 2
    end
    local text = e.text or tostring(e)
    if e.traceback and e.traceback ~= "" and os.getenv("WEIR_DEBUG") then
      text = text .. "\n" .. e.traceback
    end
    say(text)
    return 1
  end
  for _, x in ipairs(created) do
    if #x.nodes > 0 and not x.executed then
      say(("warning: %s built a pipeline but never called env:execute()"):format(job.script))
    end
  end
  io.stdout:flush()
  return 0
end

jit.off(M.run) -- set-up code, never traced (weir.codegen, "Set-up code")

return M
