-- weir.records: typed records, declared once over an FFI struct (DESIGN.md, Records).
local ffi = require("ffi")
local util = require("weir.util")
local format = require("weir.format")

local M = {}

local TYPES = {
  int8_t = true, int16_t = true, int32_t = true, uint8_t = true, uint16_t = true,
  uint32_t = true, float = true, double = true, bool = true,
}

local declared = {}

---weir.record_type(name, {"double ts", "int32_t key", ...}): a constructor for records that
---live in C memory. Fields are numbers (int64 is not offered: it would reach Lua as boxed
---cdata; time fits a double exactly). rec_t{...} or rec_t(a, b, ...) makes one record.
---@return ffi.ctype
function M.record_type(name, fields)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    util.build_error("record_type: the name must be an identifier, got %s", tostring(name))
  end
  if declared[name] then
    return declared[name]
  end
  if type(fields) ~= "table" or #fields == 0 then
    util.build_error("record_type %s: expected a list of fields such as \"double ts\"", name)
  end
  local decl, names = {}, {}
  for i, f in ipairs(fields) do
    local t, n = tostring(f):match("^%s*([%w_]+)%s+([%a_][%w_]*)%s*$")
    if not t or not TYPES[t] then
      util.build_error("record_type %s: field %d %q must be \"<type> <name>\" with a type of %s",
        name, i, tostring(f), "int8/16/32_t, uint8/16/32_t, float, double or bool")
    end
    decl[i] = t .. " " .. n .. ";"
    names[i] = n
  end
  local ct = ffi.metatype(ffi.typeof("struct { " .. table.concat(decl, " ") .. " }"), {
    __tostring = function(r)
      local parts = {}
      for i, n in ipairs(names) do
        parts[i] = n .. "=" .. format.value(r[n])
      end
      return name .. "{" .. table.concat(parts, ", ") .. "}"
    end,
  })
  declared[name] = ct
  return ct
end

return M
