-- weir.repl_session: the REPL session's state (S: the job, the one that ended, the plan, the
-- replays, the prompt's globals, the flags) and what every part of the REPL uses with it: the
-- runtime input is read from (the job's, or a bare one between jobs), the prompt (and its
-- completion words), output, errors and usage mistakes (which make a piped session exit 1).
local ffi = require("ffi")
local C = require("weir.ffi")
local words = require("weir.repl_words")

local M = {}

local S = {} -- the session
M.S = S

S.events = ffi.new("weir_event_t[1]") -- the poll's event while no job runs

function M.say(...)
  io.stdout:write(...)
  io.stdout:write("\n")
end

-- The runtime the REPL reads from: the running job's, or a bare one between jobs.
function M.rt()
  return S.job and S.job.rt or S.bare
end

function M.open_bare()
  S.bare = C.weir_rt_new(C.WEIR_CLOCK_VIRTUAL, 0)
  if C.weir_repl_open(S.bare, S.interactive and 1 or 0, S.history) < 0
      or C.weir_rt_start(S.bare) < 0 then
    error("weir: repl: " .. ffi.string(C.weir_rt_error(S.bare)), 0)
  end
end

function M.close_bare()
  if S.bare ~= nil then
    C.weir_rt_free(S.bare)
    S.bare = nil
  end
end

-- Shows prompt p (at a terminal, with the completion words of the session as it is now).
function M.prompt(p)
  S.prompt = p
  if S.interactive then
    local w = words.words(S.command_names, S.globals)
    C.weir_repl_set_words(M.rt(), w, #w)
    C.weir_repl_prompt(M.rt(), p)
  end
end

-- An error: on stderr, and a session read from a file or pipe then exits 1.
function M.report_error(err)
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
function M.usage(text)
  S.failed = true
  M.say(text)
end

return M
