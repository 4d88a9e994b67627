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
local MAX_KEEP_DEPTH = 90 -- weir.checkpoint's limit (string.buffer refuses 100)

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

---Whether table v can go into a checkpoint section as it is: no metatable, keys that are
---strings or numbers, values that are nil, booleans, numbers, strings, 64-bit integers or such
---tables, at most MAX_KEEP_DEPTH deep. No identity set: a table reached twice is written once
---per place (string.buffer splits it, as copy does), and a cycle ends at the depth limit.
local function simple(v, depth)
  if getmetatable(v) ~= nil or depth > MAX_KEEP_DEPTH then
    return false
  end
  for k, x in pairs(v) do
    local kt, xt = type(k), type(x)
    if kt ~= "string" and kt ~= "number" then
      return false
    end
    if xt == "table" then
      if not simple(x, depth + 1) then
        return false
      end
    elseif xt ~= "number" and xt ~= "string" and xt ~= "boolean" and not (xt == "cdata"
      and (ffi.istype("int64_t", x) or ffi.istype("uint64_t", x))) then
      return false
    end
  end
  return true
end

---The value a checkpoint section holds for user value v (window contents, trigger and window
---state, keys): v itself when it is kept as it is (a table is walked, nothing is copied: the
---section is encoded before any user code runs again), else copy(v) (marker tables for
---records and json.null). When v holds what a checkpoint cannot keep (a function, a metatable,
---other cdata, a cycle): nil and the path of the part that is wrong from `path` and why
---(weir.checkpoint.unfit).
function M.keep(v, path)
  local t = type(v)
  if t == "table" then
    if simple(v, 0) then
      return v
    end
  elseif t ~= "cdata" and t ~= "function" and t ~= "userdata" and t ~= "thread" then
    return v
  end
  local c = M.copy(v, 0)
  local p, why = require("weir.checkpoint").unfit(c, path)
  if p then
    return nil, p, why
  end
  return c
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
