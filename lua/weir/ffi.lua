-- weir.ffi: the one ffi.cdef of weir_ffi.h; returns the C namespace of the weir binary.
local ffi = require("ffi")

ffi.cdef(require("weir._cdef"))

return ffi.C
