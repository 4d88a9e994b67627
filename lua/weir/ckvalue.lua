-- weir.ckvalue: values in checkpoint sections beyond what the codec takes as they are. A
-- weir.record_type record (cdata) is written as its bytes and its type's name, weir.json.null
-- (compared by identity) as a marker; copy makes those marker tables (and copies tables, so a
-- value shared between windows or keys is written once per place, as Flink serialises each
-- window's and key's state), thaw makes the values again at a restore. Used by weir.winckpt
-- (window state) and weir.keyed (keyed state). Not for the hot path.
local ffi = require("ffi")
local json = require("weir.json")
local records = require("weir.records")

local M = {}

local MAX_COPY_DEPTH = 95 -- the codec refuses deeper values itself, naming the path

local SENTINELS = { ["json.null"] = json.null }
local MARK = "\0weir.sentinel"
local marked = false -- set by copy since reset_marked

---A copy of a value for a checkpoint section, with marker tables for records and json.null;
---tables are copied (keeping metatables, which the codec then refuses by name).
function M.copy(v, depth)
  depth = depth or 0
  local t = type(v)
  if t == "cdata" then
    local info = records.info_of(v)
    if info then -- a weir.record_type record: its bytes, and its type by name
      marked = true
      local box = ffi.new(ffi.typeof("$[1]", ffi.typeof(v)))
      box[0] = v
      return { [MARK] = "record", n = info.name, b = ffi.string(box, ffi.sizeof(v)) }
    end
    return v
  end
  if t ~= "table" or depth > MAX_COPY_DEPTH then
    return v
  end
  if v == json.null then
    marked = true
    return { [MARK] = "json.null" }
  end
  local out = {}
  for k, x in pairs(v) do
    out[k] = M.copy(x, depth + 1)
  end
  local mt = getmetatable(v)
  if mt ~= nil then
    setmetatable(out, mt)
  end
  return out
end

---The value of a restored v: its marker tables made the values they stand for again.
function M.thaw(v, depth)
  depth = depth or 0
  if type(v) ~= "table" or depth > MAX_COPY_DEPTH then
    return v
  end
  local m = v[MARK]
  if m == "record" then
    local ct = records.declared(v.n)
    if not ct or ffi.sizeof(ct) ~= #v.b then
      error(("the checkpoint holds a record of type %s, which this job does not declare (or "
        .. "declares with another layout)"):format(tostring(v.n)), 0)
    end
    local r = ct()
    ffi.copy(r, v.b, #v.b)
    return r
  elseif m ~= nil and SENTINELS[m] then
    return SENTINELS[m]
  end
  for k, x in pairs(v) do
    if type(x) == "table" then
      v[k] = M.thaw(x, depth + 1)
    end
  end
  return v
end

---Forgets whether copy made a marker table.
function M.reset_marked()
  marked = false
end

---Whether copy made a marker table since reset_marked (a section that has none needs no thaw).
function M.marked()
  return marked
end

return M
