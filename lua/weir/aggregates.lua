-- weir.aggregates: the built-in window aggregates (API.md, Built-in aggregates): count(),
-- sum(field), min(field), max(field), avg(field), for windowed:aggregate(). Each is an ordinary
-- aggregate {create, add, merge, result}, so every window operator and assigner runs it as it
-- runs a Lua one, and it says what it is (`builtin`: {kind, field, value}) so that the fast
-- operator's tumbling windows compute it in C instead (runtime/aggs.c: one C call per batch of
-- elements, one per chunk of a watermark's fires; weir.aggwindow). The C accumulators and these
-- functions give the same doubles for the same values in the same order.
--
-- Without a window function, a window emits a record of its key, window and result (M.record):
-- a typed record window_result{key, start, stop, value} when the key is a number, a table with
-- the same fields otherwise (a string or table key, or none: window_all).
local rolling = require("weir.rolling")
local records = require("weir.records")
local format = require("weir.format")
local util = require("weir.util")
local ffi_new = require("ffi").new

local M = {}

local INF = math.huge

-- WEIR_AGG_* (runtime/weir_ffi.h)
M.KINDS = { count = 0, sum = 1, min = 2, max = 3, avg = 4 }

---The record a built-in aggregate's window emits without a window function.
M.window_result = records.record_type("window_result",
  { "double key", "double start", "double stop", "double value" })
local window_result = M.window_result

---The record of key's window [start, stop) with result value (ffi.new, which the JIT records
---as it is, rather than the type's call, a metamethod).
function M.record(key, start, stop, value)
  if type(key) == "number" then
    return ffi_new(window_result, key, start, stop, value)
  end
  return { key = key, start = start, stop = stop, value = value }
end
local record = M.record

---The window function of a built-in aggregate without one: the window's record.
function M.emit_result(key, ctx, results, out)
  local w = ctx:window()
  out(record(key, w.start, w.stop, results[1]))
end

-- What a value that is not a finite number is called in an error.
local function what_of(x)
  if type(x) == "number" then
    return tostring(x) -- nan, inf, -inf
  end
  if type(x) == "string" then
    return ("%q (a string)"):format(x)
  end
  return ("%s (a %s)"):format(format.value(x), type(x))
end

---The value of field in record v: a finite number, else an error naming the aggregate, the
---field, the value and the record (the job's on_error gets the record, as for any failure).
local function valuer(call, field)
  local get = rolling.get
  local function bad(v, x)
    error(("%s: field %s of the record %s is %s; built-in aggregates take finite numbers")
      :format(call, tostring(field), format.value(v), what_of(x)), 0)
  end
  return function(v)
    local x = get(call, v, field)
    if type(x) ~= "number" or x ~= x or x == INF or x == -INF then
      bad(v, x)
    end
    return x
  end
end
M.valuer = valuer

local function builtin(kind, field, value, agg)
  agg.builtin = { kind = kind, code = M.KINDS[kind], field = field, value = value }
  return agg
end

local function call_of(kind, field)
  return ("weir.aggregates.%s(%s)"):format(kind,
    type(field) == "string" and ("%q"):format(field) or tostring(field))
end

local function checked(kind, field, n)
  local call = call_of(kind, field)
  if n ~= 1 then
    util.build_error("%s: expected one field (a position or a name)", call)
  end
  rolling.check_field(call, field)
  return call
end

---count(): the elements of a window.
function M.count(...)
  if select("#", ...) ~= 0 then
    util.build_error("weir.aggregates.count: takes no field (it counts the elements)")
  end
  return builtin("count", nil, nil, {
    create = function() return 0 end,
    add = function(_, c) return c + 1 end,
    merge = function(a, b) return a + b end,
    result = function(c) return c end,
  })
end

---sum(field): the sum of the field's values.
function M.sum(...)
  local field = ...
  local value = valuer(checked("sum", field, select("#", ...)), field)
  return builtin("sum", field, value, {
    create = function() return 0 end,
    add = function(v, s) return s + value(v) end,
    merge = function(a, b) return a + b end,
    result = function(s) return s end,
  })
end

---min(field): the smallest of the field's values (+inf accumulates none yet).
function M.min(...)
  local field = ...
  local value = valuer(checked("min", field, select("#", ...)), field)
  return builtin("min", field, value, {
    create = function() return INF end,
    add = function(v, m)
      local x = value(v)
      return x < m and x or m
    end,
    merge = function(a, b) return b < a and b or a end,
    result = function(m) return m end,
  })
end

---max(field): the largest of the field's values.
function M.max(...)
  local field = ...
  local value = valuer(checked("max", field, select("#", ...)), field)
  return builtin("max", field, value, {
    create = function() return -INF end,
    add = function(v, m)
      local x = value(v)
      return x > m and x or m
    end,
    merge = function(a, b) return b > a and b or a end,
    result = function(m) return m end,
  })
end

---avg(field): the mean of the field's values; the accumulator is { sum, count }.
function M.avg(...)
  local field = ...
  local value = valuer(checked("avg", field, select("#", ...)), field)
  return builtin("avg", field, value, {
    create = function() return { 0, 0 } end,
    add = function(v, a)
      a[1], a[2] = a[1] + value(v), a[2] + 1
      return a
    end,
    merge = function(a, b) return { a[1] + b[1], a[2] + b[2] } end,
    result = function(a) return a[1] / a[2] end,
  })
end

return M
