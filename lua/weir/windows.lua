-- weir.windows: windows and window assigners (SEMANTICS §4).
local duration = require("weir.duration")
local codegen = require("weir.codegen")
local util = require("weir.util")

local M = {}

local INF = math.huge
local MAX_DURATION = duration.MAX_DURATION

-- Windows -----------------------------------------------------------------------------------

local Window = {}
Window.__index = Window
Window.__tostring = function(w)
  if w.start == -INF and w.stop == INF then
    return "GlobalWindow"
  end
  return ("[%d, %d)"):format(w.start, w.stop)
end
Window.__eq = function(a, b)
  return a.start == b.start and a.stop == b.stop
end

---The largest timestamp in the window: stop - 1 (+inf for the global window).
function Window:max_timestamp()
  if self.stop == INF then
    return INF
  end
  return self.stop - 1
end

---@return table a window [start, stop)
function M.window(start, stop)
  local w = setmetatable({ start = start, stop = stop }, Window)
  return w -- not a tail call: see weir.codegen, "Tail calls"
end

function M.is_window(w)
  return getmetatable(w) == Window
end

---Flink's TimeWindow.getWindowStartWithOffset (SEMANTICS §4.2). Java's truncating remainder
---plus `size` when negative is exactly Lua's flooring %, which the JIT compiles (math.fmod
---it does not, and this runs per element).
function M.window_start(ts, offset, size)
  return ts - (ts - offset) % size
end
local window_start = M.window_start

-- Assigners: assign(self, ts, now, starts) fills starts[1..n] and returns n; windows are
-- [starts[i], starts[i] + size). is_event_time decides lateness and cleanup.

local Assigner = {}
Assigner.__index = Assigner

local function assigner(fields)
  return setmetatable(fields, Assigner)
end

function M.is_assigner(a)
  return getmetatable(a) == Assigner
end

local function check_offset(call, offset, bound)
  local o = offset == nil and 0 or duration.parse(offset, call .. " offset")
  if o <= -bound or o >= bound then
    util.build_error("%s: the offset must be smaller than %s in absolute value", call,
      bound == INF and "the size" or tostring(bound) .. " ms")
  end
  return o
end

local function tumbling(call, size, offset, event_time)
  local sz = duration.parse_nonneg(size, call .. " size", true)
  local o = check_offset(call, offset, sz)
  return assigner({ name = call, size = sz, slide = sz, offset = o, is_event_time = event_time,
                    default_trigger = event_time and "event_time" or "processing_time" })
end

local function sliding(call, size, slide, offset, event_time)
  local sz = duration.parse_nonneg(size, call .. " size", true)
  local sl = duration.parse_nonneg(slide, call .. " slide", true)
  local o = check_offset(call, offset, sl)
  if sz / sl > 1e7 then
    util.build_error("%s: size / slide must be at most 10^7", call)
  end
  local k = sz / sl
  return assigner({ name = call, size = sz, slide = sl, offset = o, is_event_time = event_time,
                    default_trigger = event_time and "event_time" or "processing_time",
                    -- size a whole number of slides: every element is in exactly k windows
                    starts_of = k % 1 == 0 and k <= codegen.SWEEP_MAX and codegen.window_starts(k)
                      or nil })
end

function M.tumbling_event_time(size, offset)
  return tumbling("tumbling_event_time", size, offset, true)
end

function M.sliding_event_time(size, slide, offset)
  return sliding("sliding_event_time", size, slide, offset, true)
end

function M.tumbling_processing_time(size, offset)
  return tumbling("tumbling_processing_time", size, offset, false)
end

function M.sliding_processing_time(size, slide, offset)
  return sliding("sliding_processing_time", size, slide, offset, false)
end

-- Session windows (SEMANTICS §4.5): each element opens [t, t + gap); windows that overlap or
-- touch merge. The window operator does the merging; the assigner gives the gap.

function M.event_time_session(gap)
  local g = duration.parse_nonneg(gap, "event_time_session gap", true)
  return assigner({ name = "event_time_session", merging = true, gap = g, is_event_time = true,
                    default_trigger = "event_time" })
end

function M.processing_time_session(gap)
  local g = duration.parse_nonneg(gap, "processing_time_session gap", true)
  return assigner({ name = "processing_time_session", merging = true, gap = g,
                    is_event_time = false, default_trigger = "processing_time" })
end

---Sessions whose gap comes from each element: fn(v) -> gap in ms (> 0).
function M.dynamic_event_time_session(fn)
  if type(fn) ~= "function" then
    util.build_error("dynamic_event_time_session: expected a function fn(v) -> gap")
  end
  return assigner({ name = "dynamic_event_time_session", merging = true, gap_fn = fn,
                    is_event_time = true, default_trigger = "event_time" })
end

---The session window [start, stop) of one element.
function Assigner:session(v, ts, now)
  local t = self.is_event_time and ts or now
  local gap = self.gap
  if self.gap_fn then
    gap = self.gap_fn(v)
    if type(gap) ~= "number" or not (gap > 0 and gap <= MAX_DURATION) or gap % 1 ~= 0 then
      error(("dynamic_event_time_session: the gap must be a whole number of ms in 1..2^51, "
        .. "got %s"):format(duration.show(gap)), 0)
    end
  end
  return t, t + gap
end

---One window per key that never ends; its default trigger never fires.
function M.global()
  return assigner({ name = "global", global = true, is_event_time = false,
                    default_trigger = "never" })
end

---Fills starts with the windows of an element (descending start order, as Flink's sliding
---assigner) and returns how many there are.
function Assigner:assign(ts, now, starts)
  if self.global then
    starts[1] = -INF
    return 1
  end
  local t = ts
  if not self.is_event_time then
    t = now
  end
  local size, slide = self.size, self.slide
  if size == slide then
    starts[1] = window_start(t, self.offset, size)
    return 1
  end
  local s = window_start(t, self.offset, slide)
  if self.starts_of then
    return self.starts_of(starts, s, slide)
  end
  local n = 0
  while s > t - size do
    n = n + 1
    starts[n] = s
    s = s - slide
  end
  return n
end

---The stop of the window that starts at start.
function Assigner:stop(start)
  if self.global then
    return INF
  end
  return start + self.size
end

return M
