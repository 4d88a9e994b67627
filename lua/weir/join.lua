-- weir.join: the joins of two streams (API.md, Joins). The window join and co_group are built
-- as Flink builds them (JoinedStreams, CoGroupedStreams): each input is mapped to a tagged
-- union ({1, v} or {2, v}), the two are unioned, keyed by where(fa) / equal_to(fb) and windowed,
-- and the window function splits a fired window's elements back into the two sides (Flink's
-- CoGroupWindowFunction); so their windows' state, triggers, lateness and checkpoints are those
-- of the window layer. The interval join (Flink's IntervalJoin, IntervalJoinOperator) is a
-- two-input keyed operator of its own, weir.interval. Owns the builders (installed into
-- weir.stream).
local util = require("weir.util")
local duration = require("weir.duration")
local tag = require("weir.tag")
local windows = require("weir.windows")
local triggers = require("weir.triggers")
local evictors = require("weir.evictors")
local connect = require("weir.connect")

local M = {}

local Joined = {}
Joined.__index = Joined
Joined.__tostring = function(self)
  return ("%s(%s, %s)"):format(self.call == "join" and "JoinedStreams" or "CoGroupedStreams",
    tostring(self.first), tostring(self.second))
end
M.Joined = Joined

local Interval = {}
Interval.__index = Interval
Interval.__tostring = function(self)
  return ("IntervalJoin(%s, %s)"):format(tostring(self.first), tostring(self.second))
end
M.Interval = Interval

-- The window join and co_group -------------------------------------------------------------

local function key_fn(call, what, f)
  if type(f) ~= "function" then
    util.build_error("%s: %s: expected a key selector function, got %s", call, what, type(f))
  end
end

function Joined:where(fa)
  key_fn(self.call, "where", fa)
  self.where_fn = fa
  return self
end

function Joined:equal_to(fb)
  if not self.where_fn then
    util.build_error("%s: equal_to: call where(fa) first (a:%s(b):where(fa):equal_to(fb))",
      self.call, self.call)
  end
  key_fn(self.call, "equal_to", fb)
  self.equal_fn = fb
  return self
end

function Joined:window(assigner)
  if not (self.where_fn and self.equal_fn) then
    util.build_error("%s: window: call where(fa):equal_to(fb) first", self.call)
  end
  if not windows.is_assigner(assigner) then
    util.build_error("%s: window: expected a window assigner from weir.windows", self.call)
  end
  self.assigner = assigner
  return self
end

local function windowed_only(self, what)
  if not self.assigner then
    util.build_error("%s: %s: call window(assigner) first", self.call, what)
  end
end

function Joined:trigger(t)
  windowed_only(self, "trigger")
  if not triggers.is_trigger(t) then
    util.build_error("trigger: expected a trigger from weir.triggers or weir.trigger{...}")
  end
  self.trigger_ = t
  return self
end

function Joined:evictor(e)
  windowed_only(self, "evictor")
  if not evictors.is_evictor(e) then
    util.build_error("evictor: expected an evictor from weir.evictors or weir.evictor{...}")
  end
  self.evictor_ = e
  return self
end

function Joined:allowed_lateness(d)
  windowed_only(self, "allowed_lateness")
  self.lateness = duration.parse_nonneg(d, "allowed_lateness")
  return self
end

-- The tagged union's two maps: one table per record, as Flink's TaggedUnion (the window keeps
-- it as the element).
local function tag1(v) return { 1, v } end
local function tag2(v) return { 2, v } end

-- The window function of a join or co_group: the fired window's elements split by side, in
-- arrival order (Flink's CoGroupWindowFunction), then the user's function.
local function cogroup_function(fn)
  return function(key, _, elements, out)
    local ls, rs = {}, {}
    for i = 1, #elements do
      local u = elements[i]
      if u[1] == 1 then
        ls[#ls + 1] = u[2]
      else
        rs[#rs + 1] = u[2]
      end
    end
    fn(key, ls, rs, out)
  end
end

-- A join is a co_group that emits fn(l, r) for every pair (Flink's JoinCoGroupFunction): left
-- elements outer, right inner, each in arrival order.
local function join_function(fn)
  return cogroup_function(function(_, ls, rs, out)
    for i = 1, #ls do
      local l = ls[i]
      for j = 1, #rs do
        local v = fn(l, rs[j])
        if v == nil then
          error("join: the join function returned nil (records cannot be nil; use co_group "
            .. "to emit some pairs only)", 0)
        end
        out(v)
      end
    end
  end)
end

function M.install(stream)
  local Stream, Keyed = stream.Stream, stream.Keyed

  local function joined(self, other, call)
    connect.check_other(call, self, other, Stream, Keyed)
    local j = setmetatable({ env = self.env, first = self, second = other, call = call,
                             lateness = 0 }, Joined)
    -- one never applied is a build error at execute, as a dangling windowed stream (env.lua)
    self.env.unfinished_windows[j] = util.callsite()
    return j
  end

  function Stream:join(other)
    return joined(self, other, "join")
  end

  function Stream:co_group(other)
    return joined(self, other, "co_group")
  end

  function Joined:apply(fn)
    windowed_only(self, "apply")
    if type(fn) ~= "function" then
      util.build_error("%s: apply: expected a function %s, got %s", self.call,
        self.call == "join" and "fn(l, r) -> v" or "fn(key, ls, rs, out)", type(fn))
    end
    self.env.unfinished_windows[self] = nil
    local at = util.callsite()
    local fa, fb = self.where_fn, self.equal_fn
    local a = stream.operator(self.first, "map", { fn = tag1, name = self.call .. " input 1 ("
      .. at .. ")", join_tag = 1 })
    local b = stream.operator(self.second, "map", { fn = tag2, name = self.call .. " input 2 ("
      .. at .. ")", join_tag = 2 })
    local keyed = a:union(b):key_by(function(u)
      if u[1] == 1 then
        return fa(u[2])
      end
      return fb(u[2])
    end)
    local w = stream.windowed(keyed, self.assigner, true, self.call)
    if self.trigger_ then
      w:trigger(self.trigger_)
    end
    if self.evictor_ then
      w:evictor(self.evictor_)
    end
    w.lateness = self.lateness
    return w:apply(self.call == "join" and join_function(fn) or cogroup_function(fn))
  end

  stream.guard(Joined, "JoinedStreams", { Joined }, { env = true, first = true, second = true,
    call = true, where_fn = true, equal_fn = true, assigner = true, trigger_ = true,
    evictor_ = true, lateness = true })

  -- The interval join ------------------------------------------------------------------------

  function Stream:interval_join(other)
    if getmetatable(self) ~= Keyed then
      util.build_error("interval_join: applies to a keyed stream: "
        .. "a:key_by(fa):interval_join(b:key_by(fb))")
    end
    connect.check_other("interval_join", self, other, Stream, Keyed)
    if getmetatable(other) ~= Keyed then
      util.build_error("interval_join: the other stream must be keyed too: "
        .. "a:key_by(fa):interval_join(b:key_by(fb))")
    end
    return setmetatable({ env = self.env, first = self, second = other, lower_inclusive = true,
                          upper_inclusive = true }, Interval)
  end

  function Interval:between(lo, hi)
    local l = duration.parse(lo, "interval_join between's lower bound")
    local h = duration.parse(hi, "interval_join between's upper bound")
    if l > h then
      local function show(d) return type(d) == "string" and ("%q"):format(d) or tostring(d) end
      util.build_error("interval_join: between(%s, %s): the lower bound is above the upper "
        .. "bound", show(lo), show(hi))
    end
    self.lo, self.hi = l, h
    return self
  end

  function Interval:lower_bound_exclusive()
    self.lower_inclusive = false
    return self
  end

  function Interval:upper_bound_exclusive()
    self.upper_inclusive = false
    return self
  end

  local function late_tag(call, t)
    if not tag.is_tag(t) then
      util.build_error("%s: expected an output tag from weir.output_tag(id)", call)
    end
    return t
  end

  function Interval:side_output_left_late_data(t)
    self.left_late = late_tag("side_output_left_late_data", t)
    return self
  end

  function Interval:side_output_right_late_data(t)
    self.right_late = late_tag("side_output_right_late_data", t)
    return self
  end

  function Interval:process(fn)
    if self.lo == nil then
      util.build_error("interval_join: process: call between(lo, hi) first")
    end
    local f = stream.user_fn("interval_join process", fn, "process")
    if f.rich then
      for _, m in ipairs({ "open", "close" }) do
        if fn[m] ~= nil and type(fn[m]) ~= "function" then
          util.build_error("interval_join: process: '%s' must be a function", m)
        end
      end
    end
    -- Flink moves an exclusive bound by 1 ms, so later checks are inclusive
    f.lo = self.lower_inclusive and self.lo or self.lo + 1
    f.hi = self.upper_inclusive and self.hi or self.hi - 1
    f.left_late, f.right_late = self.left_late, self.right_late
    local node = connect.add_node(stream, self.first, self.second, "interval_join", f)
    return stream.new(self.env, { { node = node } })
  end

  stream.guard(Interval, "IntervalJoin", { Interval }, { env = true, first = true,
    second = true, lo = true, hi = true, lower_inclusive = true, upper_inclusive = true,
    left_late = true, right_late = true })
end

return M
