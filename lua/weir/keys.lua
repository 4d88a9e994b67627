-- weir.keys: a key's Java hashCode (API.md, key_by) and its subtask, as Flink partitions keys.
local bit = require("bit")
local C = require("weir.ffi")
local format = require("weir.format")

local M = {}

local type, tobit = type, bit.tobit

-- Tuple keys nest at most this deep: deeper (or a table that contains itself) is a key of no
-- Java equivalent, and the bound keeps hashing, interning and printing a key off the C stack.
local MAX_DEPTH = 32
M.MAX_DEPTH = MAX_DEPTH

-- Only on failure: whether table t contains itself, for the message.
local function has_cycle(t, path)
  path = path or {}
  if path[t] then
    return true
  end
  path[t] = true
  for _, v in pairs(t) do
    if type(v) == "table" and has_cycle(v, path) then
      return true
    end
  end
  path[t] = nil
  return false
end

---Java hashCode of a Lua key, or nil and an error message for keys of no Java equivalent.
---@param k any
---@param depth integer|nil the tuple depth of k (internal)
---@return integer|nil, string|nil
local function java_hash(k, depth)
  local tk = type(k)
  -- not tail calls (weir.codegen, "Tail calls"): h, then return h
  if tk == "string" then
    local h = C.weir_keygroup_hash_string(k, #k)
    return h
  elseif tk == "number" then
    local h = C.weir_keygroup_hash_number(k)
    return h
  elseif tk == "boolean" then
    return k and 1231 or 1237
  elseif tk == "table" and getmetatable(k) == nil then
    depth = (depth or 0) + 1
    if depth > MAX_DEPTH then
      return nil, false -- the outermost call says why
    end
    local n = #k
    local count = 0
    for _ in pairs(k) do
      count = count + 1
    end
    if n == 0 or count ~= n then
      return nil, "a key table must be a non-empty sequence (a tuple)"
    end
    local h = 0
    for i = 1, n do
      local fh, err = java_hash(k[i], depth)
      if not fh then
        if err == false and depth == 1 then
          err = has_cycle(k) and "a key tuple cannot contain itself"
            or ("key tuples nest at most %d deep"):format(MAX_DEPTH)
        end
        return nil, err
      end
      h = tobit(31 * h + fh)
    end
    return h
  end
  return nil, ("a key must be a string, number, boolean or sequence of those, not %s")
    :format(tk)
end

M.java_hash = java_hash

---Raises the error for a key that cannot be hashed, naming the key.
function M.bad_key(k, why)
  if k == nil then
    error("key_by: the key selector returned nil", 0)
  end
  error(("key_by: cannot hash key %s: %s"):format(format.brief(k, 200), why), 0)
end

---Subtask (0-based) that owns key k, for a keyed operator of parallelism p.
---@return integer
function M.subtask(k, max_parallelism, p)
  local h, why = java_hash(k)
  if not h then
    M.bad_key(k, why)
  end
  local st = C.weir_keygroup_subtask(C.weir_keygroup_of(h, max_parallelism), max_parallelism, p)
  return st -- not a tail call: see weir.codegen, "Tail calls"
end

return M
