-- weir.json: JSON lines into Lua values (the tape runtime/json.cc fills) and Lua values into
-- JSON text (the json format of print and write_text). API.md, Formats, is the mapping.
local ffi = require("ffi")
local C = require("weir.ffi")
local records = require("weir.records")
local tnew = require("table.new")

local M = {}

local ffi_string, type, concat, sort, format = ffi.string, type, table.concat, table.sort,
  string.format
local floor, huge = math.floor, math.huge
local J_NULL, J_FALSE, J_TRUE = tonumber(C.WEIR_JSON_NULL), tonumber(C.WEIR_JSON_FALSE),
  tonumber(C.WEIR_JSON_TRUE)
local J_NUMBER, J_STRING, J_ARRAY = tonumber(C.WEIR_JSON_NUMBER), tonumber(C.WEIR_JSON_STRING),
  tonumber(C.WEIR_JSON_ARRAY)

---weir.null: JSON's null where Lua has no nil, an element of an array (a member of an object
---that is null is left out) or a whole line that is null; written back as null.
M.null = setmetatable({}, { __tostring = function() return "null" end,
  __newindex = function() error("weir.null cannot be changed", 2) end })
local NULL = M.null

-- The value at tape[i] and the index after it.
local function build(tape, i)
  local t = tape[i]
  local k = t.kind
  if k == J_NUMBER then
    return t.num, i + 1
  elseif k == J_STRING then
    return ffi_string(t.str, t.len), i + 1
  elseif k == J_TRUE then
    return true, i + 1
  elseif k == J_FALSE then
    return false, i + 1
  elseif k == J_NULL then
    return NULL, i + 1
  elseif k == J_ARRAY then
    local n = t.len
    local a = tnew(n, 0)
    i = i + 1
    for x = 1, n do
      a[x], i = build(tape, i)
    end
    return a, i
  end
  local n = t.len -- an object
  local o = tnew(0, n)
  i = i + 1
  for _ = 1, n do
    local key = tape[i]
    local v
    v, i = build(tape, i + 1)
    if v ~= NULL then
      o[ffi_string(key.str, key.len)] = v
    end
  end
  return o, i
end

---A decoder of JSON lines: decode(ptr, len) gives true and the value, or nil and the message
---("column 7: ..."). One parser per decoder; the GC frees it.
---@return function
function M.decoder()
  local j = ffi.gc(C.weir_json_new(), C.weir_json_free)
  return function(ptr, len)
    local n = C.weir_json_decode(j, ptr, len)
    if n < 0 then
      return nil, ffi_string(C.weir_json_error(j))
    end
    return true, (build(C.weir_json_tape(j), 0))
  end
end

---The value of one JSON text s, or nil and the message.
function M.decode(s)
  local ok, v = M.decoder()(s, #s)
  return ok and v, not ok and v or nil
end

-- ---- encoding ----------------------------------------------------------------------------

local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
for b = 0, 31 do
  local c = string.char(b)
  ESCAPES[c] = ESCAPES[c] or format("\\u%04x", b)
end
ESCAPES["\127"] = "\\u007f"

local function quote(s)
  return '"' .. s:gsub('[%c"\\]', ESCAPES) .. '"'
end

local function fail(what, path)
  error(("cannot write %s as JSON%s"):format(what, path ~= "" and " (at " .. path .. ")" or ""),
    0)
end

local function number_text(v, path)
  if v ~= v or v == huge or v == -huge then
    fail(tostring(v), path)
  end
  if v == floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then
    local s = format("%.0f", v)
    return s -- not a tail call: see weir.codegen, "Tail calls"
  end
  -- the shortest of 15, 16 or 17 digits that reads back as v
  local s = format("%.15g", v)
  if tonumber(s) ~= v then
    s = format("%.16g", v)
    if tonumber(s) ~= v then
      s = format("%.17g", v)
    end
  end
  return s
end

local function key_before(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then
    return ta == "number"
  end
  return a < b
end

local encode_value
local seen = {}

local function sequence_length(t)
  local n = #t
  local count = 0
  for _ in pairs(t) do
    count = count + 1
    if count > n then
      return nil
    end
  end
  return count == n and n or nil
end

local function encode_table(t, out, path)
  if seen[t] then
    fail("a table that contains itself", path)
  end
  seen[t] = true
  local n = sequence_length(t)
  if n then
    out[#out + 1] = "["
    for i = 1, n do
      if i > 1 then out[#out + 1] = "," end
      encode_value(t[i], out, path .. "[" .. i .. "]")
    end
    out[#out + 1] = "]"
  else
    local keys = {}
    for k in pairs(t) do
      local tk = type(k)
      if tk ~= "string" and tk ~= "number" then
        fail("a table with a " .. tk .. " key", path)
      end
      keys[#keys + 1] = k
    end
    sort(keys, key_before)
    out[#out + 1] = "{"
    for i, k in ipairs(keys) do
      if i > 1 then out[#out + 1] = "," end
      local name = type(k) == "number" and number_text(k, path) or k
      out[#out + 1] = quote(name)
      out[#out + 1] = ":"
      encode_value(t[k], out, path .. "." .. name)
    end
    out[#out + 1] = "}"
  end
  seen[t] = nil
end

function encode_value(v, out, path)
  local tv = type(v)
  if tv == "string" then
    out[#out + 1] = quote(v)
  elseif tv == "number" then
    out[#out + 1] = number_text(v, path)
  elseif tv == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif v == nil or v == NULL then
    out[#out + 1] = "null"
  elseif tv == "table" then
    encode_table(v, out, path)
  elseif tv == "cdata" and records.info_of(v) then
    local info = records.info_of(v)
    out[#out + 1] = "{"
    for i, n in ipairs(info.names) do
      if i > 1 then out[#out + 1] = "," end
      out[#out + 1] = quote(n)
      out[#out + 1] = ":"
      local x = v[n]
      if info.types[i] == "bool" then
        out[#out + 1] = x and "true" or "false"
      else
        encode_value(type(x) == "cdata" and tonumber(x) or x, out, path .. "." .. n)
      end
    end
    out[#out + 1] = "}"
  else
    fail("a " .. tv, path)
  end
end

---The JSON text of v (one line: strings escaped, no spaces). Tables with 1..n and nothing
---else are arrays (the empty table too), other tables objects with their keys sorted (numbers
---first, written as strings); records of weir.record_type are objects in field order; nil and
---weir.null are null. Fails for NaN and infinities, other key types, functions, userdata,
---other cdata and a table that contains itself.
---@return string
function M.encode(v)
  if next(seen) ~= nil then
    seen = {}
  end
  local out = {}
  encode_value(v, out, "")
  return concat(out)
end

return M
