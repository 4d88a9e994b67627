-- weir.triggers: trigger results and Flink's built-in triggers (SEMANTICS §6), written on the
-- same contract as user triggers: on_element(self, v, ts, window, ctx),
-- on_event_time(self, time, window, ctx), on_processing_time(self, time, window, ctx),
-- clear(self, window, ctx), and on_merge(self, window, ctx) for triggers that can merge.
local duration = require("weir.duration")
local util = require("weir.util")

local M = {}

-- Results are bit sets: 1 = fire, 2 = purge.
M.CONTINUE, M.FIRE, M.PURGE, M.FIRE_AND_PURGE = 0, 1, 2, 3
local CONTINUE, FIRE, FIRE_AND_PURGE = 0, 1, 3

local Trigger = {}
Trigger.__index = Trigger

local function continue()
  return CONTINUE
end
local function nothing() end

local function trigger(name, t)
  t.name = name
  t.on_element = t.on_element or continue
  t.on_event_time = t.on_event_time or continue
  t.on_processing_time = t.on_processing_time or continue
  t.clear = t.clear or nothing
  return setmetatable(t, Trigger)
end

function M.is_trigger(t)
  return getmetatable(t) == Trigger
end

local VALID = { [0] = true, [1] = true, [2] = true, [3] = true }

---A user trigger with Flink's contract. on_merge present means it can be used with merging
---(session) windows.
function M.new(t)
  if type(t) ~= "table" then
    util.build_error("weir.trigger: expected a table of methods")
  end
  for _, m in ipairs({ "on_element", "on_event_time", "on_processing_time", "clear",
                       "on_merge" }) do
    if t[m] ~= nil and type(t[m]) ~= "function" then
      util.build_error("weir.trigger: %s must be a function, got %s", m, type(t[m]))
    end
  end
  if not t.on_element then
    util.build_error("weir.trigger: on_element is required")
  end
  local copy = util.copy(t)
  copy.defined = util.defined_at(t.on_element)
  return trigger(t.name or "custom trigger", copy)
end

M.valid_result = VALID

function M.never()
  return trigger("never", { on_merge = nothing })
end

function M.event_time()
  return trigger("event_time", {
    builtin = "event_time", -- weir.aggwindow knows this trigger and does its work itself
    on_element = function(_, _, _, w, ctx)
      local m = w:max_timestamp()
      if m <= ctx:current_watermark() then
        return FIRE
      end
      ctx:register_event_time_timer(m)
      return CONTINUE
    end,
    on_event_time = function(_, t, w)
      return t == w:max_timestamp() and FIRE or CONTINUE
    end,
    clear = function(_, w, ctx)
      ctx:delete_event_time_timer(w:max_timestamp())
    end,
    on_merge = function(_, w, ctx)
      local m = w:max_timestamp()
      if m > ctx:current_watermark() then
        ctx:register_event_time_timer(m)
      end
    end,
  })
end

function M.processing_time()
  return trigger("processing_time", {
    on_element = function(_, _, _, w, ctx)
      ctx:register_processing_time_timer(w:max_timestamp())
      return CONTINUE
    end,
    on_processing_time = function()
      return FIRE
    end,
    clear = function(_, w, ctx)
      ctx:delete_processing_time_timer(w:max_timestamp())
    end,
    on_merge = function(_, w, ctx)
      local m = w:max_timestamp()
      if m > ctx:current_processing_time() then
        ctx:register_processing_time_timer(m)
      end
    end,
  })
end

function M.count(n)
  util.check_int("triggers.count", "the count", n)
  return trigger("count", {
    count = n, -- for the inspectors (weir.windowing: a count trigger waits for a count)
    on_element = function(_, _, _, _, ctx)
      local s = ctx:state("count")
      local c = (s:get() or 0) + 1
      if c >= n then
        s:clear()
        return FIRE
      end
      s:set(c)
      return CONTINUE
    end,
    clear = function(_, _, ctx)
      ctx:state("count"):clear()
    end,
    on_merge = function(_, _, ctx)
      ctx:merge_state("count", function(a, b) return a + b end)
    end,
  })
end

function M.purging(inner)
  if not M.is_trigger(inner) then
    util.build_error("triggers.purging: expected a trigger")
  end
  local function purge(r)
    if r == FIRE or r == FIRE_AND_PURGE then
      return FIRE_AND_PURGE
    end
    return r
  end
  return trigger("purging(" .. inner.name .. ")", {
    inner = inner,
    on_element = function(_, v, ts, w, ctx)
      return purge(inner:on_element(v, ts, w, ctx))
    end,
    on_event_time = function(_, t, w, ctx)
      return purge(inner:on_event_time(t, w, ctx))
    end,
    on_processing_time = function(_, t, w, ctx)
      return purge(inner:on_processing_time(t, w, ctx))
    end,
    clear = function(_, w, ctx)
      return inner:clear(w, ctx)
    end,
    on_merge = inner.on_merge and function(_, w, ctx)
      return inner:on_merge(w, ctx)
    end or nil,
  })
end

local function min_merge(a, b)
  return a < b and a or b
end

-- The shared half of Flink's Continuous{Event,Processing}TimeTrigger: the state "fire-time"
-- keeps the next fire (the minimum, when windows merge); a timer at it fires and schedules the
-- next one, capped at the window's end (FLINK-20443).
local function continuous(name, iv, register, delete)
  local function on_timer(_, t, w, ctx)
    local s = ctx:state("fire-time")
    if s:get() == t then
      local nxt = math.min(t + iv, w:max_timestamp())
      s:set(nxt)
      ctx[register](ctx, nxt)
      return FIRE
    end
    return CONTINUE
  end
  local function first_fire(base, w, ctx)
    local s = ctx:state("fire-time")
    if s:get() == nil then
      local nxt = math.min(base - math.fmod(base, iv) + iv, w:max_timestamp())
      s:set(nxt)
      ctx[register](ctx, nxt)
    end
  end
  return trigger(name, {
    on_timer = on_timer,
    first_fire = first_fire,
    clear = function(_, _, ctx)
      local s = ctx:state("fire-time")
      local t = s:get()
      if t ~= nil then
        ctx[delete](ctx, t)
        s:clear()
      end
    end,
    on_merge = function(_, _, ctx)
      local t = ctx:merge_state("fire-time", min_merge)
      if t ~= nil then
        ctx[register](ctx, t)
      end
    end,
  })
end

---Fires every `interval` of event time (multiples since the epoch, from the first element's
---timestamp) and at the window's end.
function M.continuous_event_time(interval)
  local iv = duration.parse_nonneg(interval, "continuous_event_time", true)
  local t = continuous("continuous_event_time", iv, "register_event_time_timer",
    "delete_event_time_timer")
  t.on_element = function(self, _, ts, w, ctx)
    local m = w:max_timestamp()
    if m <= ctx:current_watermark() then
      return FIRE
    end
    ctx:register_event_time_timer(m)
    self.first_fire(ts, w, ctx)
    return CONTINUE
  end
  t.on_event_time = function(self, time, w, ctx)
    if time == w:max_timestamp() then
      return FIRE
    end
    return self.on_timer(self, time, w, ctx)
  end
  return t
end

---Fires every `interval` of processing time (multiples since the epoch) until the window's end.
function M.continuous_processing_time(interval)
  local iv = duration.parse_nonneg(interval, "continuous_processing_time", true)
  local t = continuous("continuous_processing_time", iv, "register_processing_time_timer",
    "delete_processing_time_timer")
  t.on_element = function(self, _, _, w, ctx)
    self.first_fire(ctx:current_processing_time(), w, ctx)
    return CONTINUE
  end
  t.on_processing_time = t.on_timer
  return t
end

---Flink's ProcessingTimeoutTrigger: fires the window `timeout` of processing time after its
---first element (or its last, with reset_timer_on_new_record), whatever the inner trigger
---says; clear_on_timeout (default true) clears the trigger then, including the inner trigger's
---timers (SEMANTICS §6 explains the trap this sets with processing_time()).
function M.processing_timeout(inner, timeout, reset_timer_on_new_record, clear_on_timeout)
  if not M.is_trigger(inner) then
    util.build_error("triggers.processing_timeout: expected a trigger to wrap")
  end
  local to = duration.parse_nonneg(timeout, "processing_timeout", true)
  local reset = reset_timer_on_new_record and true or false
  local clear_on = clear_on_timeout == nil and true or (clear_on_timeout and true or false)
  local self_t
  local function clear(_, w, ctx)
    local s = ctx:state("timeout")
    local t = s:get()
    if t ~= nil then
      ctx:delete_processing_time_timer(t)
      s:clear()
    end
    inner:clear(w, ctx)
  end
  local function timed_out(r)
    if r >= 2 then
      return FIRE_AND_PURGE
    end
    return FIRE
  end
  self_t = trigger(("processing_timeout(%s)"):format(inner.name), {
    inner = inner,
    on_element = function(_, v, ts, w, ctx)
      local r = inner:on_element(v, ts, w, ctx)
      if r % 2 == 1 then
        clear(self_t, w, ctx)
        return r
      end
      local s = ctx:state("timeout")
      local nxt = ctx:current_processing_time() + to
      local t = s:get()
      if t ~= nil and reset then
        ctx:delete_processing_time_timer(t)
        s:clear()
        t = nil
      end
      if t == nil then
        s:set(nxt)
        ctx:register_processing_time_timer(nxt)
      end
      return r
    end,
    on_processing_time = function(_, t, w, ctx)
      local r = inner:on_processing_time(t, w, ctx)
      if clear_on then
        clear(self_t, w, ctx)
      end
      return timed_out(r)
    end,
    on_event_time = function(_, t, w, ctx)
      local r = inner:on_event_time(t, w, ctx)
      if clear_on then
        clear(self_t, w, ctx)
      end
      return timed_out(r)
    end,
    clear = clear,
  })
  return self_t
end

function M.delta(threshold, fn)
  if type(threshold) ~= "number" then
    util.build_error("triggers.delta: the threshold must be a number")
  end
  if type(fn) ~= "function" then
    util.build_error("triggers.delta: expected a delta function fn(old, new) -> number")
  end
  return trigger("delta", {
    on_element = function(_, v, _, _, ctx)
      local s = ctx:state("last-element")
      local last = s:get()
      if last == nil then
        s:set(v)
        return CONTINUE
      end
      if fn(last, v) > threshold then
        s:set(v)
        return FIRE
      end
      return CONTINUE
    end,
    clear = function(_, _, ctx)
      ctx:state("last-element"):clear()
    end,
  })
end

return M
