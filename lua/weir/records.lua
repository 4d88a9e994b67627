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
  string = C.WEIR_FIELD_STRING,
}

-- A string field: "string name" holds at most STRING_BYTES bytes, "string[N] name" at most N
-- (1..MAX_STRING). In C it is char[N + 1] (NUL-padded) under a hidden member name; reading
-- the field gives a Lua string, assigning one checks its length.
local STRING_BYTES, MAX_STRING = 31, 4095

local declared = {}
local infos = {} -- ctype -> { name, names = {...}, types = {...}, bounds = {[i] = N} }
local by_id = {} -- tonumber(ctype) -> the same info

local function member(n)
  return "_str_" .. n
end

---The metatable parts of a record type with string fields: __index and __newindex for the
---string fields (by their names), __new checking every string given to the constructor.
local function string_methods(mt, tname, names, strs)
  local ffi_string, ffi_new, ffi_fill, ffi_copy = ffi.string, ffi.new, ffi.fill, ffi.copy
  local select, type = select, type
  mt.__index = function(r, k)
    local m = strs[k]
    if m then
      return ffi_string(r[m[1]])
    end
    error(("record %s has no field %s"):format(tname, tostring(k)), 2)
  end
  mt.__newindex = function(r, k, v)
    local m = strs[k]
    if not m then
      error(("record %s has no field %s"):format(tname, tostring(k)), 2)
    end
    if type(v) ~= "string" or #v > m[2] or v:find("\0", 1, true) then
      error(("record %s: field %s takes a string of at most %d bytes without NUL, got %s")
        :format(tname, k, m[2], type(v) == "string" and ("%d bytes"):format(#v) or type(v)), 2)
    end
    ffi_fill(r[m[1]], m[2] + 1)
    ffi_copy(r[m[1]], v, #v)
  end
  mt.__new = function(ct, ...)
    local n, a = select("#", ...), ...
    if n == 1 and type(a) == "cdata" then
      return ffi_new(ct, a)
    end
    local r = ffi_new(ct)
    if n == 1 and type(a) == "table" then
      for i = 1, #names do
        local v = a[names[i]]
        if v == nil then v = a[i] end
        if v ~= nil then r[names[i]] = v end
      end
      return r
    end
    for i = 1, n do
      r[names[i]] = (select(i, ...))
    end
    return r
  end
end

---weir.record_type(name, {"double ts", "int32_t key", "string user", ...}): a constructor for
---records that live in C memory. Fields are numbers (int64 is not offered: it would reach Lua
---as boxed cdata; time fits a double exactly) and bounded strings ("string[N] name", N bytes,
---31 by default). rec_t{...} or rec_t(a, b, ...) makes one record.
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
  local decl, names, types, bounds, strs = {}, {}, {}, {}, nil
  for i, f in ipairs(fields) do
    local t, bound, n = tostring(f):match("^%s*([%w_]+)(%[?%d*%]?)%s+([%a_][%w_]*)%s*$")
    if t == "string" then
      local b = bound == "" and STRING_BYTES or tonumber(bound:match("^%[(%d+)%]$"))
      if not b or b < 1 or b > MAX_STRING then
        util.build_error("record_type %s: field %d %q: a string's bound is string[N] with N "
          .. "from 1 to %d", name, i, tostring(f), MAX_STRING)
      end
      strs = strs or {}
      strs[n] = { member(n), b }
      decl[i] = ("char %s[%d];"):format(member(n), b + 1)
      bounds[i] = b
    elseif not t or not TYPES[t] or bound ~= "" then
      util.build_error("record_type %s: field %d %q must be \"<type> <name>\" with a type of %s",
        name, i, tostring(f), "int8/16/32_t, uint8/16/32_t, float, double, bool or string")
    else
      decl[i] = t .. " " .. n .. ";"
    end
    names[i] = n
    types[i] = t
  end
  local mt = {
    __tostring = function(r)
      local parts = {}
      for i, n in ipairs(names) do
        local v = r[n]
        parts[i] = n .. "=" .. (type(v) == "string" and ("%q"):format(v) or format.value(v))
      end
      return name .. "{" .. table.concat(parts, ", ") .. "}"
    end,
  }
  if strs then
    string_methods(mt, name, names, strs)
  end
  local ct = ffi.metatype(ffi.typeof("struct { " .. table.concat(decl, " ") .. " }"), mt)
  declared[name] = ct
  infos[ct] = { name = name, names = names, types = types, bounds = bounds }
  by_id[tonumber(ct)] = infos[ct]
  return ct
end

---The record type declared as name, or nil (a checkpoint's restore finds records' types).
function M.declared(name)
  return declared[name]
end

---What weir.record_type declared for ct: { name, names = {field...}, types = {type...} }, or nil
---when ct is not a record type.
---@return table|nil
function M.info(ct)
  return infos[ct]
end

local FORMATS = { text = C.WEIR_FORMAT_TEXT, json = C.WEIR_FORMAT_JSON, csv = C.WEIR_FORMAT_CSV }

---What weir.record_type declared for the type of the cdata v, or nil.
---@return table|nil
function M.info_of(v)
  return by_id[tonumber(ffi.typeof(v))]
end

---The C layout of a record type for weir_fields_parse: its fields in declaration order, at
---their ffi.offsetof, with their names; lines of format ("text" default, "json", "csv"; csv
---with header: the first line names the columns) cut at separator (one byte). Freed by the GC.
---@return ffi.cdata weir_fields_t*
function M.layout(ct, separator, fmt, header)
  local info = infos[ct]
  local f = ffi.gc(C.weir_fields_new(ffi.sizeof(ct), separator:byte()), C.weir_fields_free)
  for i, n in ipairs(info.names) do
    local t, b = info.types[i], info.bounds[i]
    local offset = ffi.offsetof(ct, b and member(n) or n)
    if C.weir_fields_add_named(f, KINDS[t], offset, b and b + 1 or 0, n) ~= 0 then
      error(("record_type %s: field %s does not fit the record"):format(info.name, n))
    end
  end
  if C.weir_fields_set_format(f, FORMATS[fmt or "text"], header and 1 or 0) ~= 0 then
    error(("record_type %s: cannot read it as %s"):format(info.name, fmt))
  end
  return f
end

---weir.nexmark.bid: the record env:nexmark_bids makes (runtime/nexmark_gen.h's struct).
M.nexmark_bid = M.record_type("nexmark_bid",
  { "int32_t auction", "int32_t bidder", "int32_t price", "double ts" })

-- set-up code, never traced (weir.codegen, "Set-up code"): once per record type and source
jit.off(M.layout)

return M
