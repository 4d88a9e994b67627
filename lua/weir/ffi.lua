-- weir.ffi: the one ffi.cdef of weir_ffi.h; returns the C namespace of the weir binary.
local ffi = require("ffi")

local cdef = require("weir._cdef")
ffi.cdef(cdef)

-- Every function and constant of the header is looked up now, once: the first lookup of a name
-- in ffi.C inside a trace aborts the trace ("symbol not in cache"), wherever it comes first
-- (a stats call, a rare branch), and LuaJIT's hot counters are shared, so any code may be
-- recorded. A few hundred names, well under a millisecond.
local C = ffi.C
local function resolve(name)
  return C[name]
end
for name in cdef:gmatch("([%a_][%w_]*)%s*%(") do
  if name:find("^weir_") then
    pcall(resolve, name)
  end
end
for name in cdef:gmatch("WEIR_[%w_]+") do
  pcall(resolve, name)
end

return C
