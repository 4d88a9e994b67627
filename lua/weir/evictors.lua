-- weir.evictors: Flink's evictors (SEMANTICS §7). An evictor sees the window's elements
-- (value and timestamp, arrival order) before and/or after the window function runs;
-- what it removes is gone for good.
local duration = require("weir.duration")
local util = require("weir.util")

local M = {}

local Evictor = {}
Evictor.__index = Evictor

function M.is_evictor(e)
  return getmetatable(e) == Evictor
end

-- Elements: the view an evictor gets of a window's contents.
local Elements = {}
Elements.__index = Elements

---@return table elements over parallel lists of values and timestamps
function M.elements(values, stamps)
  local e = setmetatable({ values = values, stamps = stamps }, Elements)
  return e -- not a tail call: see weir.codegen, "Tail calls"
end

function Elements:size()
  return #self.values
end

---for i, value, timestamp in elements:iter() — safe to call elements:remove(i) while iterating.
function Elements:iter()
  local values, stamps = self.values, self.stamps
  local i, n = 0, #values
  local removed_before = self.removed or 0
  return function()
    i = i + 1
    -- removals during iteration shift later elements left; follow them
    local shift = (self.removed or 0) - removed_before
    removed_before = self.removed or 0
    i = i - shift
    n = n - shift
    if i > n then
      return nil
    end
    return i, values[i], stamps[i]
  end
end

function Elements:remove(i)
  table.remove(self.values, i)
  table.remove(self.stamps, i)
  self.removed = (self.removed or 0) + 1
end

local function evictor(name, before, after)
  return setmetatable({ name = name, evict_before = before, evict_after = after }, Evictor)
end

local function opts_after(call, opts)
  opts = util.check_opts(call, opts, { after = true })
  return opts.after and true or false
end

local function keep_last(n)
  return function(_, elements, size)
    if size <= n then
      return
    end
    local values, stamps = elements.values, elements.stamps
    local drop = size - n
    for i = 1, n do
      values[i], stamps[i] = values[i + drop], stamps[i + drop]
    end
    for i = size, n + 1, -1 do
      values[i], stamps[i] = nil, nil
    end
  end
end

---Keeps at most n elements, removing from the front (arrival order).
function M.count(n, opts)
  util.check_int("evictors.count", "the count", n, 0)
  local after = opts_after("evictors.count", opts)
  local f = keep_last(n)
  return evictor("count", not after and f or nil, after and f or nil)
end

---Removes every element with timestamp <= max timestamp - keep.
function M.time(keep, opts)
  local k = duration.parse_nonneg(keep, "evictors.time")
  local after = opts_after("evictors.time", opts)
  local function f(_, elements, size)
    local stamps = elements.stamps
    if size == 0 or stamps[1] == nil then
      return
    end
    local max = -math.huge
    for i = 1, size do
      if stamps[i] > max then
        max = stamps[i]
      end
    end
    local cutoff = max - k
    local values, j = elements.values, 0
    for i = 1, size do
      if stamps[i] > cutoff then
        j = j + 1
        values[j], stamps[j] = values[i], stamps[i]
      end
    end
    for i = size, j + 1, -1 do
      values[i], stamps[i] = nil, nil
    end
  end
  return evictor("time", not after and f or nil, after and f or nil)
end

---Removes every element e with fn(e, last) >= threshold, last being the last element.
function M.delta(threshold, fn, opts)
  if type(threshold) ~= "number" then
    util.build_error("evictors.delta: the threshold must be a number")
  end
  if type(fn) ~= "function" then
    util.build_error("evictors.delta: expected a delta function fn(a, b) -> number")
  end
  local after = opts_after("evictors.delta", opts)
  local function f(_, elements, size)
    if size == 0 then
      return
    end
    local values, stamps = elements.values, elements.stamps
    local last = values[size]
    local j = 0
    for i = 1, size do
      if fn(values[i], last) < threshold then
        j = j + 1
        values[j], stamps[j] = values[i], stamps[i]
      end
    end
    for i = size, j + 1, -1 do
      values[i], stamps[i] = nil, nil
    end
  end
  return evictor("delta", not after and f or nil, after and f or nil)
end

---A user evictor: {evict_before = fn(self, elements, size, window, ctx), evict_after = ...}.
function M.new(e)
  if type(e) ~= "table" or (e.evict_before == nil and e.evict_after == nil) then
    util.build_error("weir.evictor: expected a table with evict_before and/or evict_after")
  end
  for _, m in ipairs({ "evict_before", "evict_after" }) do
    if e[m] ~= nil and type(e[m]) ~= "function" then
      util.build_error("weir.evictor: %s must be a function", m)
    end
  end
  local c = setmetatable(util.copy(e), Evictor)
  c.name = e.name or "custom evictor"
  return c
end

return M
