-- weir.lazy: a module loaded on its first use. lazy.require(name) returns the module when it is
-- loaded already, else a stand-in table whose first field read (or write) requires it; the
-- stand-in then reads and writes the module's own table. A job loads only the modules its
-- operators need: the Kafka, JSON, CSV, replay, keyed-state, join and checkpoint modules were
-- ~0.6 ms of every job's start, as much CPU as a simple job's first million records.
-- Not for a module whose table is compared, iterated (pairs) or read at load time by the
-- module that requires it: that would load it at once anyway, or see the stand-in.
local M = {}

---The module name, or a stand-in that loads it on first use.
---@param name string a module name, as for require
---@return table
function M.require(name)
  local loaded = package.loaded[name]
  if loaded then
    return loaded
  end
  local proxy = {}
  local function load()
    local m = require(name)
    setmetatable(proxy, { __index = m, __newindex = m })
    return m
  end
  setmetatable(proxy, {
    __index = function(_, k) return load()[k] end,
    __newindex = function(_, k, v) load()[k] = v end,
  })
  return proxy
end
-- set-up code (weir.codegen, "Set-up code"), but not the stand-in's metamethods: their first
-- call may fall inside a trace being recorded (a module's first use from run-time code), and a
-- call into a function with the compiler off aborts that trace
jit.off(M.require)

return M
