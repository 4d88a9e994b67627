-- weir.param: job parameters from the command line (`--param NAME=VALUE`, run, explain, repl,
-- timeline; `weir sweep` gives lists NAME=V1,V2,...). weir.param(name, default) reads one,
-- converted to its default's type; a parameter given but never read is an error at
-- env:execute() (a warning in the REPL), so a misspelt name cannot make every setting of a
-- sweep the same job.
-- Set-up code, run while the job is built (or once per job): never traced, so that a one-off
-- loop LuaJIT's shared hot counters make look hot cannot abort a trace (weir.codegen,
-- "Set-up code").
jit.off(true, true)
local duration = require("weir.duration")
local util = require("weir.util")

local M = {}

local given = {}   -- name -> value text
local order = {}   -- names, in command-line order
local read = {}    -- name -> true once weir.param read it
local checked = false

local NAME = "^[%a_][%w_]*$"

---Splits "NAME=VALUE"; nil and the problem when it is not that.
---@return string|nil, string
function M.split(arg)
  local name, value = arg:match("^([^=]*)=(.*)$")
  if not name then
    return nil, ("--param %s: expected NAME=VALUE (e.g. out_of_orderness=2s)"):format(arg)
  end
  if not name:match(NAME) then
    return nil, ("--param %s: the name %q is not a name (letters, digits and _, not starting "
      .. "with a digit)"):format(arg, name)
  end
  return name, value
end

---Sets the parameters of this run from the command line's "NAME=VALUE" texts. Returns nil,
---or the usage problem (a malformed one, a name given twice).
---@param list string[]|nil
---@return string|nil
function M.set(list)
  given, order, read, checked = {}, {}, {}, false
  for _, arg in ipairs(list or {}) do
    local name, value = M.split(arg)
    if not name then
      return value
    end
    if given[name] ~= nil then
      return ("--param %s: %s is given twice"):format(arg, name)
    end
    given[name] = value
    order[#order + 1] = name
  end
  return nil
end

---The value text of a parameter given on the command line, or nil.
function M.given(name)
  return given[name]
end

---weir.param(name, default): the value given with --param name=VALUE, else default. The value
---takes default's type: a number default takes a number or a duration ("2s" is 2000, ms); a
---boolean default takes true or false; a string or nil default takes the text as it is.
function M.get(name, default)
  if type(name) ~= "string" or not name:match(NAME) then
    util.build_error("weir.param: the name must be a string of letters, digits and _, got %s",
      duration.show(name))
  end
  local td = type(default)
  if td ~= "nil" and td ~= "number" and td ~= "string" and td ~= "boolean" then
    util.build_error("weir.param(%q): the default must be a number, string or boolean, got a %s",
      name, td)
  end
  read[name] = true
  local text = given[name]
  if text == nil then
    return default
  end
  if td == "number" then
    local v = tonumber(text) or duration.text_ms(text)
    if not v then
      util.build_error("weir.param(%q): --param %s=%s is not a number or a duration (the "
        .. "default is the number %s)", name, name, text, duration.show(default))
    end
    return v
  elseif td == "boolean" then
    if text == "true" then
      return true
    elseif text == "false" then
      return false
    end
    util.build_error("weir.param(%q): --param %s=%s must be true or false (the default is %s)",
      name, name, text, tostring(default))
  end
  return text
end

---The parameters given but never read, in command-line order.
---@return string[]
function M.unread()
  local out = {}
  for _, name in ipairs(order) do
    if not read[name] then
      out[#out + 1] = name
    end
  end
  return out
end

---At env:execute() (and when a script ends without one): a parameter no weir.param read is a
---usage error, or (in the REPL, where weir.param may still be called at the prompt) a
---warning. Once per run.
function M.check(mode)
  if checked then
    return
  end
  checked = true
  local names = M.unread()
  if #names == 0 then
    return
  end
  local known = {}
  for name in pairs(read) do
    known[#known + 1] = name
  end
  table.sort(known)
  local text = ("--param %s: the job never reads %s with weir.param (%s)"):format(
    names[1] .. "=" .. given[names[1]], #names > 1 and "it (nor " .. table.concat(names, ", ", 2)
      .. ")" or "it",
    #known > 0 and "it reads: " .. table.concat(known, ", ") or "it reads no parameter")
  if mode == "repl" then
    io.stderr:write("weir: warning: ", text, "\n")
    return
  end
  error({ usage = true, msg = text }, 0)
end

return M
