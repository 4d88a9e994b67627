-- weir.rolling: the rolling aggregates of a keyed stream (API.md): reduce, sum, min, max,
-- min_by, max_by, with Flink's semantics (StreamGroupedReduceOperator over SumAggregator and
-- ComparableAggregator). Builds the reduce function of each; weir.keyed runs them.
local ffi = require("ffi")
local util = require("weir.util")

local M = {}

-- How a field is read: a 1-based position in a sequence, a name in a table, a field of a typed
-- record; a number record is its own field 1 (Flink's sum(0) on a stream of numbers).
local function check_field(call, field)
  local tf = type(field)
  if not ((tf == "number" and field >= 1 and field % 1 == 0) or (tf == "string" and field ~= ""))
  then
    util.build_error("%s: expected a field: a position (1, 2, ...) or a name, got %s", call,
      tf == "number" and tostring(field) or tf)
  end
end

M.check_field = check_field

local function get(call, v, field)
  local tv = type(v)
  if tv == "number" and field == 1 then
    return v
  end
  if tv ~= "table" and tv ~= "cdata" then
    error(("%s: the record is a %s, which has no field %s"):format(call, tv, tostring(field)), 0)
  end
  local x = v[field]
  if x == nil then
    error(("%s: the record has no field %s"):format(call, tostring(field)), 0)
  end
  return x
end

M.get = get

-- A copy of record v with its field set to x (the record emitted before stays as it was).
local function with(v, field, x)
  local tv = type(v)
  if tv == "number" then
    return x
  end
  local r
  if tv == "cdata" then
    r = ffi.new(ffi.typeof(v), v)
  else
    r = {}
    for k, e in pairs(v) do
      r[k] = e
    end
    setmetatable(r, getmetatable(v))
  end
  r[field] = x
  return r
end

local function compare(call, a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb or (ta ~= "number" and ta ~= "string") then
    error(("%s: cannot compare %s with %s (fields must be numbers or strings)"):format(call,
      ta, tb), 0)
  end
  return a < b and -1 or (a > b and 1 or 0)
end

---The reduce function of a rolling aggregate: cur is the value so far, v the new record.
function M.reducer(what, field, first)
  local call = what
  if what == "sum" then
    return function(cur, v)
      local a, b = get(call, cur, field), get(call, v, field)
      if type(a) ~= "number" or type(b) ~= "number" then
        error(("sum: field %s is not a number"):format(tostring(field)), 0)
      end
      return with(cur, field, a + b) -- the first record's other fields (SumAggregator)
    end
  elseif what == "min" or what == "max" then
    local sign = what == "min" and -1 or 1
    return function(cur, v)
      local a, b = get(call, cur, field), get(call, v, field)
      -- ComparableAggregator, not by aggregate: unless cur's field is strictly extremal, the
      -- new field value goes into cur (the first record's other fields)
      if compare(call, a, b) == sign then
        return cur
      end
      return with(cur, field, b)
    end
  else -- min_by, max_by: the whole record holding the extreme; ties: first (or last)
    local sign = what == "min_by" and -1 or 1
    return function(cur, v)
      local c = compare(call, get(call, cur, field), get(call, v, field))
      if c == 0 then
        return first and cur or v
      end
      return c == sign and cur or v
    end
  end
end

---Adds the builder methods to the keyed stream.
---user_fn is weir.stream's (a plain or rich function's node fields).
function M.install(Keyed, add_node, user_fn)
  function Keyed:reduce(fn)
    local f = user_fn("reduce", fn, "reduce") -- a rich reduce function: {reduce, open, close}
    f.rolling_call, f.reduce_fn = "reduce", not f.rich and fn or nil
    return add_node(self, f)
  end
  for _, what in ipairs({ "sum", "min", "max" }) do
    Keyed[what] = function(self, field)
      check_field(what, field)
      return add_node(self, { rolling_call = what, field = field,
                              reduce_fn = M.reducer(what, field) })
    end
  end
  for _, what in ipairs({ "min_by", "max_by" }) do
    Keyed[what] = function(self, field, first)
      check_field(what, field)
      if first ~= nil and type(first) ~= "boolean" then
        util.build_error("%s: 'first' must be a boolean (true: the first record on ties)", what)
      end
      return add_node(self, { rolling_call = what, field = field,
                              reduce_fn = M.reducer(what, field, first ~= false) })
    end
  end
end

return M
