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

it("util.is_nil_site equals v == nil, types alternating or repeated, in a loop", function()
  local is_nil = require("weir.util").is_nil_site()
  local rec = require("weir").record_type("ffi_spec_rec2", { "int32_t a" })
  local values = { rec(1), ffi.cast("void *", 0), rec(2), ffi.new("int *", ffi.new("int[1]")),
    ffi.new("void *"), nil, {}, rec(3), ffi.cast("int *", 0) }
  for round = 1, 3 do
    for i = 1, 10 do -- the nil among them too (6 and 10)
      local v = values[i]
      eq(is_nil(v), v == nil, "round " .. round .. " value " .. i .. " " .. tostring(v))
      eq(is_nil(v), v == nil, "again, round " .. round .. " value " .. i)
    end
  end
  -- a loop of one type (a trace's hit path), then a NULL pointer of another and back
  local n = 0
  for i = 1, 300 do
    if is_nil(rec(i)) then n = n + 1 end
  end
  eq(n, 0)
  eq(is_nil(ffi.cast("void *", 0)), true)
  eq(is_nil(rec(1)), false)
end)

it("has the C size for weir_json_tok_t", function()
  eq(ffi.sizeof("weir_json_tok_t"), 24)
end)

spec.finish()
