-- weir.util: small helpers shared by the job-building modules (call sites, checks, copies).
local ffi = require("ffi")

local M = {}

---The pending timers of one domain of a C timer service (timers.c), in pop order: buf, n
---(buf[0 .. n-1]; n = 0 and no buf when there are none). For listings and snapshots only.
function M.timers_list(timers, domain)
  local C = require("weir.ffi")
  local n = C.weir_timers_count(timers, domain)
  if n == 0 then
    return nil, 0
  end
  local buf = ffi.new("weir_timer_t[?]", n)
  C.weir_timers_list(timers, domain, buf, n)
  return buf, n
end

---"file:line" of the nearest caller outside weir's own modules, for job-build errors.
---@return string
function M.callsite()
  for level = 2, 50 do
    local info = debug.getinfo(level, "Sl")
    if not info then
      break
    end
    local src = info.source
    if (src:sub(1, 6) ~= "@weir/" and src:sub(1, 1) == "@") or src == "=stdin" then
      return info.short_src .. ":" .. tostring(info.currentline)
    end
  end
  return "?"
end

---Raises a job-build error naming the user's script line.
function M.build_error(fmt, ...)
  error(M.callsite() .. ": " .. fmt:format(...), 0)
end

---Checks that fn is a function or a rich function (a table with the method).
---@return string kind "function" or "rich"
function M.check_fn(call, fn, method, alias)
  if type(fn) == "function" then
    return "function"
  end
  if type(fn) == "table" and (type(fn[method]) == "function"
      or (alias and type(fn[alias]) == "function")) then
    return "rich"
  end
  M.build_error("%s: expected a function or a table with a '%s' method, got %s%s",
    call, method, type(fn), fn == nil and require("weir.mistakes").dot_hint() or "")
end

---"job.lua:12" where a function was defined, or nil for C functions.
function M.defined_at(fn)
  if type(fn) == "table" then
    for _, v in pairs(fn) do
      if type(v) == "function" then
        fn = v
        break
      end
    end
  end
  if type(fn) ~= "function" then
    return nil
  end
  local info = debug.getinfo(fn, "S")
  if info.what == "C" then
    return nil
  end
  return info.short_src .. ":" .. tostring(info.linedefined)
end

---Deep copy of a rich function's table for one subtask (functions and metatables shared).
function M.copy(v, seen)
  if type(v) ~= "table" then
    return v
  end
  seen = seen or {}
  if seen[v] then
    return seen[v]
  end
  local c = {}
  seen[v] = c
  for k, x in pairs(v) do
    c[M.copy(k, seen)] = M.copy(x, seen)
  end
  return setmetatable(c, getmetatable(v))
end

---Checks an options table against the allowed keys, naming an unknown one.
function M.check_opts(call, opts, allowed)
  if opts == nil then
    return {}
  end
  if type(opts) ~= "table" then
    M.build_error("%s: options must be a table, got %s", call, type(opts))
  end
  for k in pairs(opts) do
    if not allowed[k] then
      local names = {}
      for n in pairs(allowed) do
        if n:sub(1, 1) ~= "_" then -- "_name": internal (weir's own tests), not listed
          names[#names + 1] = n
        end
      end
      table.sort(names)
      M.build_error("%s: unknown option '%s' (known: %s)", call, tostring(k),
        table.concat(names, ", "))
    end
  end
  return opts
end

---Checks an integer argument: at least min (default 1), at most max (default 2^53 - 1, so
---that it is exact; the option's C type when it crosses the FFI, e.g. 2^31 - 1 for int32_t).
function M.check_int(call, what, v, min, max)
  min, max = min or 1, max or 2 ^ 53 - 1
  if type(v) ~= "number" or v ~= math.floor(v) or v < min or v > max then
    if max == 2 ^ 53 - 1 then
      M.build_error("%s: %s must be an integer >= %d, got %s", call, what, min, tostring(v))
    end
    M.build_error("%s: %s must be an integer from %d to %d, got %s", call, what, min, max,
      tostring(v))
  end
  return v
end

-- Per FFI ctype id: whether a cdata of that type can equal nil, i.e. is a pointer or reference
-- (a NULL one does). Found once per type from the type's name.
local nullable = {}
-- upvalues, not globals: is_nil runs per record on the traces (as aggstate's type); typeof
-- too, not ffi's field: a function upvalue is a constant there, ffi.typeof a hash load and a
-- guard in the pre-loop part of every root trace that tests a record
local type, tonumber, typeof = type, tonumber, ffi.typeof

---Whether v == nil, as the operators test a record, without `v == nil` on a struct cdata:
---there LuaJIT compares the record's address with NULL, which is never equal but makes a
---record made on the trace escape (not sunk: one GC allocation per record). Equal to
---`v == nil` for every value: only nil and NULL pointers (and references) equal nil.
function M.is_nil(v)
  if type(v) ~= "cdata" then
    return v == nil
  end
  local id = tonumber(typeof(v))
  local can = nullable[id]
  if can == nil then
    can = tostring(typeof(v)):find("[*&]") ~= nil
    nullable[id] = can
  end
  return can and v == nil
end

-- set-up code, never traced (weir.codegen, "Set-up code"): all but is_nil, which runs per
-- record (M.copy's setmetatable tail call returned into its never-compiled caller, weir.run's
-- instantiate: "JIT compilation disabled for function")
for name, f in pairs(M) do
  if name ~= "is_nil" then
    jit.off(f)
  end
end

return M
