-- weir.records: typed records, declared once over an FFI struct (DESIGN.md, Records).
local ffi = require("ffi")
local C = require("weir.ffi")
local util = require("weir.util")
local format = require("weir.format")

local M = {}

local TYPES = {
  int8_t = true, int16_t = true, int32_t = true, uint8_t = true, uint16_t = true,
  uint32_t = true, float = true, double = true, bool = true,
}

-- the kind weir_fields_add takes for each field type
local KINDS = {
  int8_t = C.WEIR_FIELD_INT8, int16_t = C.WEIR_FIELD_INT16, int32_t = C.WEIR_FIELD_INT32,
  uint8_t = C.WEIR_FIELD_UINT8, uint16_t = C.WEIR_FIELD_UINT16, uint32_t = C.WEIR_FIELD_UINT32,
  float = C.WEIR_FIELD_FLOAT, double = C.WEIR_FIELD_DOUBLE, bool = C.WEIR_FIELD_BOOL,
}

local declared = {}
local infos = {} -- ctype -> { name, names = {...}, types = {...} }

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
  local decl, names, types = {}, {}, {}
  for i, f in ipairs(fields) do
    local t, n = tostring(f):match("^%s*([%w_]+)%s+([%a_][%w_]*)%s*$")
    if not t or not TYPES[t] then
      util.build_error("record_type %s: field %d %q must be \"<type> <name>\" with a type of %s",
        name, i, tostring(f), "int8/16/32_t, uint8/16/32_t, float, double or bool")
    end
    decl[i] = t .. " " .. n .. ";"
    names[i] = n
    types[i] = t
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
  infos[ct] = { name = name, names = names, types = types }
  return ct
end

---What weir.record_type declared for ct: { name, names = {field...}, types = {type...} }, or nil
---when ct is not a record type.
---@return table|nil
function M.info(ct)
  return infos[ct]
end

---The C layout of a record type for weir_fields_parse: its fields in declaration order, at
---their ffi.offsetof, cut at separator (one byte). Freed by the GC.
---@return ffi.cdata weir_fields_t*
function M.layout(ct, separator)
  local info = infos[ct]
  local f = ffi.gc(C.weir_fields_new(ffi.sizeof(ct), separator:byte()), C.weir_fields_free)
  for i, n in ipairs(info.names) do
    if C.weir_fields_add(f, KINDS[info.types[i]], ffi.offsetof(ct, n)) ~= 0 then
      error(("record_type %s: field %s does not fit the record"):format(info.name, n))
    end
  end
  return f
end

---weir.nexmark.bid: the record env:nexmark_bids makes (runtime/nexmark_gen.h's struct).
M.nexmark_bid = M.record_type("nexmark_bid",
  { "int32_t auction", "int32_t bidder", "int32_t price", "double ts" })

return M
