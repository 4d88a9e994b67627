-- weir.watermarks: watermark strategies (SEMANTICS §1-2) and the per-subtask generators and
-- emitters that the assign_timestamps_and_watermarks operator runs.
local duration = require("weir.duration")
local util = require("weir.util")

local M = {}

local INF = math.huge
local MAX_EXACT = duration.MAX_EXACT

local Strategy = {}
Strategy.__index = Strategy

local function strategy(kind, fields)
  fields.kind = kind
  return setmetatable(fields, Strategy)
end

---Flink's forBoundedOutOfOrderness(B): watermark = max timestamp - B - 1.
function M.bounded_out_of_orderness(delay)
  local b = duration.parse_nonneg(delay, "bounded_out_of_orderness")
  return strategy("bounded", { delay = b })
end

---Flink's forMonotonousTimestamps(): bounded out-of-orderness 0.
function M.monotonous()
  return strategy("bounded", { delay = 0 })
end

---Flink's noWatermarks(): timestamps only, never a watermark.
function M.no_watermarks()
  return strategy("none", {})
end

---A user generator: {on_event = fn(self, v, ts, out), on_periodic_emit = fn(self, out)}.
---Each subtask gets its own copy of the table.
function M.custom(gen)
  if type(gen) ~= "table" then
    util.build_error("watermarks.custom: expected a table with on_event and/or on_periodic_emit")
  end
  for _, m in ipairs({ "on_event", "on_periodic_emit" }) do
    if gen[m] ~= nil and type(gen[m]) ~= "function" then
      util.build_error("watermarks.custom: %s must be a function", m)
    end
  end
  if gen.on_event == nil and gen.on_periodic_emit == nil then
    util.build_error("watermarks.custom: needs on_event or on_periodic_emit")
  end
  return strategy("custom", { gen = gen })
end

local function copy_with(self, k, v)
  local c = {}
  for key, val in pairs(self) do
    c[key] = val
  end
  c[k] = v
  return setmetatable(c, Strategy)
end

---withTimestampAssigner(fn(v, record_ts) -> ts). record_ts is nil when the record has none.
function Strategy:with_timestamp_assigner(fn)
  if type(fn) ~= "function" then
    util.build_error("with_timestamp_assigner: expected a function, got %s", type(fn))
  end
  return copy_with(self, "assigner", fn)
end

---weir's idle advance: after `timeout` of processing time without records, while the source
---is truly quiet (nothing waiting in weir or in the kernel), the watermark moves with the
---clock: base + (now - last), base being what the strategy gave right after the last record.
function Strategy:with_idle_advance(timeout)
  return copy_with(self, "idle_advance", duration.parse_nonneg(timeout, "with_idle_advance", true))
end

---withIdleness(timeout): the generator marks its stream idle after timeout without records.
function Strategy:with_idleness(timeout)
  return copy_with(self, "idleness", duration.parse_nonneg(timeout, "with_idleness", true))
end

---Flink's withWatermarkAlignment(group, maxAllowedWatermarkDrift, updateInterval): the
---sources (and Kafka partitions) whose strategy names the same group are paused while their
---watermark is more than max_drift ahead of the group's minimum (weir.alignment). The update
---interval defaults to Flink's 1 s (WatermarksWithWatermarkAlignment.DEFAULT_UPDATE_INTERVAL).
function Strategy:with_watermark_alignment(group, max_drift, update_interval)
  if type(group) ~= "string" or group == "" then
    util.build_error("with_watermark_alignment: the group must be a non-empty string (the name "
      .. "the aligned sources share), got %s", type(group) == "string" and '""'
      or tostring(group))
  end
  if max_drift == nil then
    util.build_error("with_watermark_alignment(%q, max_drift[, update_interval]): max_drift "
      .. "is missing (a duration such as \"10s\")", group)
  end
  local drift = duration.parse_nonneg(max_drift, "with_watermark_alignment's max_drift")
  local every = 1000
  if update_interval ~= nil then
    every = duration.parse_nonneg(update_interval, "with_watermark_alignment's update_interval",
      true)
  end
  return copy_with(self, "alignment", { group = group, max_drift = drift, update_interval = every,
                                        site = util.callsite() })
end

function M.is_strategy(s)
  return getmetatable(s) == Strategy
end

-- Runtime: the emitter (SEMANTICS §1.4) ---------------------------------------------------

local Emitter = {}
Emitter.__index = Emitter

---The output a generator writes to. send_wm(w) and send_status(idle) forward downstream.
function M.emitter(send_wm, send_status)
  return setmetatable({ current = -INF, idle = false, send_wm = send_wm,
                        send_status = send_status }, Emitter)
end

---w: a whole number of ms within +-2^53 (API.md, Time range), or -inf/+inf (before the first
---and after the last record: +inf completes every window).
function Emitter:emit_watermark(w)
  if w ~= INF and w ~= -INF then
    local why = duration.time_problem(w, MAX_EXACT, "2^53")
    if why then
      error(("emit_watermark was given %s, %s"):format(duration.show(w), why), 2)
    end
  end
  if w <= self.current then
    return
  end
  self.current = w
  if self.idle then
    self.idle = false
    self.send_status(false)
  end
  self.send_wm(w)
end

function Emitter:mark_idle()
  if not self.idle then
    self.idle = true
    self.send_status(true)
  end
end

function Emitter:mark_active()
  if self.idle then
    self.idle = false
    self.send_status(false)
  end
end

-- Runtime: generators -------------------------------------------------------------------

local Bounded = {}
Bounded.__index = Bounded
local max = math.max
-- no branch: a branch on ts > max_ts is a side exit of the element path's trace every time the
-- timestamp grows (every 10 records in the benchmarks' in-order events), and each one re-enters
-- the root trace at its head; math.max compiles to one instruction (ts is never NaN here: the
-- timestamps operator checks it, and a record without one is -inf)
function Bounded:on_event(_, ts)
  self.max_ts = max(self.max_ts, ts)
end
function Bounded:on_periodic_emit(out)
  out:emit_watermark(self.max_ts - self.delay - 1)
end

local None = {}
None.__index = None
function None.on_event() end
function None.on_periodic_emit() end

local Custom = {}
Custom.__index = Custom
function Custom:on_event(v, ts, out)
  local f = self.gen.on_event
  if f then
    f(self.gen, v, ts, out)
  end
end
function Custom:on_periodic_emit(out)
  local f = self.gen.on_periodic_emit
  if f then
    f(self.gen, out)
  end
end

-- Flink's WatermarksWithIdleness (SEMANTICS §2): idleness is checked only at periodic emits,
-- against the processing clock, and any record between two ticks resets it.
local Idle = {}
Idle.__index = Idle
function Idle:on_event(v, ts, out)
  self.inner:on_event(v, ts, out)
  self.counter = self.counter + 1
  self.idle_now = false
end
function Idle:is_idle()
  -- held by watermark alignment: not idle (Flink pauses the input activity clock then), and the
  -- countdown starts again after the resume
  if self.counter ~= self.last_counter or (self.paused and self.paused()) then
    self.last_counter = self.counter
    self.quiet_since = nil
    return false
  end
  local now = self.now()
  if self.quiet_since == nil then
    self.quiet_since = now
    return false
  end
  return now - self.quiet_since > self.timeout
end
function Idle:on_periodic_emit(out)
  if self:is_idle() then
    if not self.idle_now then
      out:mark_idle()
      self.idle_now = true
    end
  else
    self.inner:on_periodic_emit(out)
  end
end

-- weir's idle advance (API.md): the wrapped generator runs as usual; at a tick after `timeout`
-- of quiet since the last record's arrival, the watermark is base + (now - last).
local Advance = {}
Advance.__index = Advance
local capture = { current = -INF }
function capture:emit_watermark(w)
  if w > self.current then
    self.current = w
  end
end
function capture.mark_idle() end
function capture.mark_active() end
function Advance:on_event(v, ts, out)
  self.inner:on_event(v, ts, out)
  self.last = self.arrival()
  -- base: what the strategy gives right after this record. The bounded generator is pure, so
  -- ask it; for a custom one, the last watermark it sent.
  local base = out.current
  if getmetatable(self.inner) == Bounded then
    capture.current = -INF
    self.inner:on_periodic_emit(capture)
    if capture.current > base then
      base = capture.current
    end
  end
  self.base = base
end
function Advance:on_periodic_emit(out)
  self.inner:on_periodic_emit(out)
  local last = self.last
  if last then
    local quiet_for = self.now() - last
    if quiet_for >= self.timeout and self.quiet() and self.base > -INF then
      out:emit_watermark(self.base + quiet_for)
    end
  end
end

-- Checkpoints: a generator's and an emitter's state as plain values, and back -------------

---The state of generator g (from M.generator): max timestamp, the custom generator's fields
---(not its functions), idleness and idle-advance readings.
function M.snapshot_generator(g)
  local mt = getmetatable(g)
  if mt == Bounded then
    return { kind = "bounded", max_ts = g.max_ts }
  elseif mt == None then
    return { kind = "none" }
  elseif mt == Custom then
    local fields = {}
    for k, v in pairs(g.gen) do
      if type(v) ~= "function" then
        fields[k] = v
      end
    end
    return { kind = "custom", fields = fields }
  elseif mt == Advance then
    return { kind = "advance", inner = M.snapshot_generator(g.inner), base = g.base,
             last = g.last }
  end
  return { kind = "idle", inner = M.snapshot_generator(g.inner), counter = g.counter,
           last_counter = g.last_counter, quiet_since = g.quiet_since, idle_now = g.idle_now }
end

---Gives g (a fresh generator of the same strategy) the state v from snapshot_generator.
---shift_ms moves the processing-time readings (the real clock's downtime: idleness and idle
---advance then count the quiet time before the checkpoint, not the time weir was not running).
function M.restore_generator(g, v, shift_ms)
  local mt = getmetatable(g)
  local kind = mt == Bounded and "bounded" or mt == None and "none" or mt == Custom and "custom"
    or mt == Advance and "advance" or "idle"
  if v.kind ~= kind then
    error(("the watermark strategy changed (%s in the checkpoint, %s now)"):format(v.kind, kind),
      0)
  end
  if kind == "bounded" then
    g.max_ts = v.max_ts
  elseif kind == "custom" then
    for k, x in pairs(v.fields) do
      g.gen[k] = x
    end
  elseif kind == "advance" then
    M.restore_generator(g.inner, v.inner, shift_ms)
    g.base, g.last = v.base, v.last and v.last + shift_ms
  elseif kind == "idle" then
    M.restore_generator(g.inner, v.inner, shift_ms)
    g.counter, g.last_counter, g.idle_now = v.counter, v.last_counter, v.idle_now
    g.quiet_since = v.quiet_since and v.quiet_since + shift_ms
  end
end

function M.snapshot_emitter(e)
  return { current = e.current, idle = e.idle }
end

function M.restore_emitter(e, v)
  e.current, e.idle = v.current, v.idle
end

---A fresh generator for one subtask. env has now() (the processing clock), and for
---with_idle_advance arrival() (when the current record reached weir) and quiet() (no input
---waiting for this subtask's sources); paused() (optional): watermark alignment holds its
---input, which with_idleness counts as activity.
function M.generator(s, env)
  local now = env.now
  local g
  if s.kind == "bounded" then
    g = setmetatable({ max_ts = -INF, delay = s.delay }, Bounded)
  elseif s.kind == "none" then
    g = setmetatable({}, None)
  else
    g = setmetatable({ gen = util.copy(s.gen) }, Custom)
  end
  if s.idle_advance then
    g = setmetatable({ inner = g, timeout = s.idle_advance, now = now, arrival = env.arrival,
                       quiet = env.quiet, base = -INF }, Advance)
  end
  if s.idleness then
    g = setmetatable({ inner = g, timeout = s.idleness, counter = 0, last_counter = 0,
                       quiet_since = nil, idle_now = false, now = now, paused = env.paused },
      Idle)
  end
  return g
end

-- set-up code, never traced (weir.codegen, "Set-up code"): LuaJIT's hot counters are shared
-- by hashing, so a function run once per subtask may start a trace, which then aborts on the
-- return into its caller that is jit.off
for _, f in ipairs({ M.emitter, M.generator, M.snapshot_generator, M.restore_generator,
    M.snapshot_emitter, M.restore_emitter }) do
  jit.off(f)
end

return M
