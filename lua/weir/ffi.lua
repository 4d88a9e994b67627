-- weir.ffi: the one ffi.cdef of weir_ffi.h; returns the C namespace of the weir binary.
local ffi = require("ffi")

local cdef = require("weir._cdef")
ffi.cdef(cdef)

-- Every function and constant of the header is looked up now, once: the first lookup of a name
-- in ffi.C inside a trace aborts the trace ("symbol not in cache"), wherever it comes first
-- (a stats call, a rare branch), and LuaJIT's hot counters are shared, so any code may be
-- recorded. A few hundred names, well under a millisecond.
-- The names are found with plain finds of their prefix: a gmatch of an identifier pattern over
-- the 23 KB header backtracks at every letter and took ~2 ms of every job's start (as long as
-- the cdef and the lookups together).
local C = ffi.C
local function resolve(name)
  return C[name]
end
-- the identifiers of the header that start with prefix (not inside a longer identifier),
-- followed by "(" when calls
local function names(prefix, calls)
  local out, i = {}, 1
  while true do
    local s = cdef:find(prefix, i, true)
    if not s then
      return out
    end
    local name, after = cdef:match("^([%w_]+)()", s)
    i = after
    if (s == 1 or not cdef:find("^[%w_]", s - 1)) and (not calls or cdef:find("^%s*%(", after)) then
      out[#out + 1] = name
    end
  end
end
for _, name in ipairs(names("weir_", true)) do
  pcall(resolve, name)
end
for _, name in ipairs(names("WEIR_", false)) do
  pcall(resolve, name)
end

return C
