-- spec: a tiny test runner for Lua specs run by `weir run`. it(name, fn) runs fn at once;
-- finish() prints "N passed, N failed" and fails the job if anything failed. Every trace LuaJIT
-- compiles meanwhile is checked for a known miscompile (jitcheck.lua); finish() counts one as a
-- failure. WEIR_SPEC_VERBOSE=1 names each spec on stderr as it starts (which one hangs).
local jitcheck = require("jitcheck")
local M = { passed = 0, failed = 0, prefix = "" }
jitcheck.start()

function M.describe(name, fn)
  local saved = M.prefix
  M.prefix = saved .. name .. ": "
  fn()
  M.prefix = saved
end

function M.it(name, fn)
  if os.getenv("WEIR_SPEC_VERBOSE") then io.stderr:write("IT ", M.prefix, name, "\n") end
  local ok, err = xpcall(fn, function(e)
    if type(e) == "table" then
      return tostring(e.text or e.msg or e)
    end
    return debug.traceback(e, 2)
  end)
  if ok then
    M.passed = M.passed + 1
  else
    M.failed = M.failed + 1
    io.stderr:write("FAIL ", M.prefix, name, "\n", tostring(err), "\n")
  end
end

local function show(v)
  if type(v) == "string" then
    return ("%q"):format(v)
  end
  return require("weir").format(v)
end

function M.eq(actual, expected, what)
  if type(actual) == "table" and type(expected) == "table" then
    if show(actual) ~= show(expected) then
      error(("%sexpected %s, got %s"):format(what and (what .. ": ") or "", show(expected),
        show(actual)), 2)
    end
    return
  end
  if actual ~= expected then
    error(("%sexpected %s, got %s"):format(what and (what .. ": ") or "", show(expected),
      show(actual)), 2)
  end
end

---Asserts that fn raises an error whose message contains every given fragment (plain text).
function M.raises(fn, ...)
  local ok, err = pcall(fn)
  if ok then
    error("expected an error, got none", 2)
  end
  local msg = type(err) == "table" and (err.text or err.msg) or tostring(err)
  for i = 1, select("#", ...) do
    local frag = select(i, ...)
    if not msg:find(frag, 1, true) then
      error(("error %q does not contain %q"):format(msg, frag), 2)
    end
  end
  return msg
end

function M.finish()
  local bad = jitcheck.report()
  if bad then
    M.failed = M.failed + 1
    io.stderr:write("FAIL ", bad, "\n")
  end
  print(("%d passed, %d failed"):format(M.passed, M.failed))
  if M.failed > 0 then
    error(("%d spec(s) failed"):format(M.failed), 0)
  end
end

---The path of the weir binary running this spec (/proc/self/exe), for specs that start jobs in
---weir processes of their own.
function M.weir_binary()
  local ffi = require("ffi")
  pcall(ffi.cdef, "long readlink(const char *path, char *buf, size_t size);")
  local buf = ffi.new("char[4096]")
  local n = tonumber(ffi.C.readlink("/proc/self/exe", buf, 4096))
  assert(n > 0, "readlink /proc/self/exe")
  return ffi.string(buf, n)
end

return M
