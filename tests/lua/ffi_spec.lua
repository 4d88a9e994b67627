-- Specs for the FFI surface: every weir_* prototype in weir_ffi.h resolves in the binary, and
-- by-value structs have the size C gives them.
local spec = require("spec")
local ffi = require("ffi")
local C = require("weir.ffi")
local it, eq = spec.it, spec.eq

it("resolves every weir_* function declared in weir_ffi.h", function()
  local header = require("weir._cdef")
  local missing = {}
  local count = 0
  for name in header:gmatch("[%w_%*]+%s+%**(weir_[%w_]+)%s*%(") do
    count = count + 1
    local ok = pcall(function() return C[name] end)
    if not ok then
      missing[#missing + 1] = name
    end
  end
  eq(#missing, 0, "unresolved: " .. table.concat(missing, ", "))
  assert(count > 20, "found only " .. count .. " prototypes")
end)

it("has the C size for weir_event_t", function()
  eq(ffi.sizeof("weir_event_t"), 40)
end)

it("util.is_nil equals v == nil for records of every kind", function()
  local is_nil = require("weir.util").is_nil
  local rec = require("weir").record_type("ffi_spec_rec", { "int32_t a" })
  local values = { false, 0, "", {}, rec(1), ffi.new("int64_t", 0), ffi.new("int[2]"),
    ffi.new("void *"), ffi.new("int *", ffi.new("int[1]")), ffi.cast("void *", 0) }
  eq(is_nil(nil), true)
  for i, v in ipairs(values) do
    for _ = 1, 2 do -- the second time from the per-type cache
      eq(is_nil(v), v == nil, "value " .. i .. " " .. tostring(v))
    end
  end
end)

it("has the C size for weir_json_tok_t", function()
  eq(ffi.sizeof("weir_json_tok_t"), 24)
end)

spec.finish()
