-- Specs for weir.join's window join and co_group (a tagged union into the window operator). The
-- cases marked "Flink:" are ported from Flink's CoGroupJoinITCase with their inputs and
-- expected outputs (Flink sorts both; so do these, weir's own order is checked apart).
local spec = require("spec")
local weir = require("weir")
local it, eq, raises = spec.it, spec.eq, spec.raises

-- Flink's Tuple2/Tuple3TimestampExtractor: the timestamp is the last field, and each element
-- is followed by the watermark ts - 1 (punctuated).
local function punctuated(field)
  return weir.watermarks.custom{
    on_event = function(_, _, ts, out) out:emit_watermark(ts - 1) end,
  }:with_timestamp_assigner(function(v) return v[field] end)
end

local function tuple(t)
  local parts = {}
  for i, x in ipairs(t) do parts[i] = tostring(x) end
  return "(" .. table.concat(parts, ",") .. ")"
end

local function first(v) return v[1] end

local function sorted(t)
  table.sort(t)
  return t
end

local function run(build)
  local env = weir.env()
  local got, ts = {}, {}
  build(env):sink(function(v, ctx)
    got[#got + 1] = v
    ts[#ts + 1] = ctx:timestamp()
  end)
  env:execute()
  return got, ts
end

spec.describe("window join and co_group", function()
  local s1 = { { "a", 0 }, { "a", 1 }, { "a", 2 }, { "b", 3 }, { "b", 4 }, { "b", 5 },
    { "a", 6 }, { "a", 7 }, { "a", 8 } }
  local s2 = { { "a", 0 }, { "a", 1 }, { "b", 3 }, { "c", 6 }, { "c", 7 }, { "c", 8 } }

  it("Flink: CoGroupJoinITCase testCoGroup (either side may be empty)", function()
    local got, ts = run(function(env)
      local a = env:from_elements(unpack(s1)):assign_timestamps_and_watermarks(punctuated(2))
      local b = env:from_elements(unpack(s2)):assign_timestamps_and_watermarks(punctuated(2))
      return a:co_group(b):where(first):equal_to(first)
        :window(weir.windows.tumbling_event_time(3))
        :apply(function(_, ls, rs, out)
          local f, s = {}, {}
          for _, t in ipairs(ls) do f[#f + 1] = tuple(t) end
          for _, t in ipairs(rs) do s[#s + 1] = tuple(t) end
          out("F:" .. table.concat(f) .. " S:" .. table.concat(s))
        end)
    end)
    eq(sorted(got), sorted({ "F:(a,0)(a,1)(a,2) S:(a,0)(a,1)", "F:(b,3)(b,4)(b,5) S:(b,3)",
      "F:(a,6)(a,7)(a,8) S:", "F: S:(c,6)(c,7)(c,8)" }))
    eq(sorted(ts), { 2, 5, 8, 8 }) -- the window's max timestamp
  end)

  local j1 = { { "a", "x", 0 }, { "a", "y", 1 }, { "a", "z", 2 }, { "b", "u", 3 },
    { "b", "w", 5 }, { "a", "i", 6 }, { "a", "j", 7 }, { "a", "k", 8 } }
  local j2 = { { "a", "u", 0 }, { "a", "w", 1 }, { "b", "i", 3 }, { "b", "k", 5 },
    { "a", "x", 6 }, { "a", "z", 8 } }

  it("Flink: CoGroupJoinITCase testJoin", function()
    local got = run(function(env)
      local a = env:from_elements(unpack(j1)):assign_timestamps_and_watermarks(punctuated(3))
      local b = env:from_elements(unpack(j2)):assign_timestamps_and_watermarks(punctuated(3))
      return a:join(b):where(first):equal_to(first):window(weir.windows.tumbling_event_time(3))
        :apply(function(l, r) return tuple(l) .. ":" .. tuple(r) end)
    end)
    eq(sorted(got), sorted({ "(a,x,0):(a,u,0)", "(a,x,0):(a,w,1)", "(a,y,1):(a,u,0)",
      "(a,y,1):(a,w,1)", "(a,z,2):(a,u,0)", "(a,z,2):(a,w,1)", "(b,u,3):(b,i,3)",
      "(b,u,3):(b,k,5)", "(b,w,5):(b,i,3)", "(b,w,5):(b,k,5)", "(a,i,6):(a,x,6)",
      "(a,i,6):(a,z,8)", "(a,j,7):(a,x,6)", "(a,j,7):(a,z,8)", "(a,k,8):(a,x,6)",
      "(a,k,8):(a,z,8)" }))
  end)

  it("Flink: CoGroupJoinITCase testSelfJoin", function()
    local got = run(function(env)
      local a = env:from_elements(unpack(j1)):assign_timestamps_and_watermarks(punctuated(3))
      return a:join(a):where(first):equal_to(first):window(weir.windows.tumbling_event_time(3))
        :apply(function(l, r) return tuple(l) .. ":" .. tuple(r) end)
    end)
    eq(sorted(got), sorted({ "(a,x,0):(a,x,0)", "(a,x,0):(a,y,1)", "(a,x,0):(a,z,2)",
      "(a,y,1):(a,x,0)", "(a,y,1):(a,y,1)", "(a,y,1):(a,z,2)", "(a,z,2):(a,x,0)",
      "(a,z,2):(a,y,1)", "(a,z,2):(a,z,2)", "(b,u,3):(b,u,3)", "(b,u,3):(b,w,5)",
      "(b,w,5):(b,u,3)", "(b,w,5):(b,w,5)", "(a,i,6):(a,i,6)", "(a,i,6):(a,j,7)",
      "(a,i,6):(a,k,8)", "(a,j,7):(a,i,6)", "(a,j,7):(a,j,7)", "(a,j,7):(a,k,8)",
      "(a,k,8):(a,i,6)", "(a,k,8):(a,j,7)", "(a,k,8):(a,k,8)" }))
  end)

  it("join pairs left outer, right inner, each in arrival order; results at the window's max "
    .. "timestamp", function()
    local got, ts = run(function(env)
      local a = env:from_elements({ "k", 1 }, { "k", 2 })
        :assign_timestamps_and_watermarks(punctuated(2))
      local b = env:from_elements({ "k", 4 }, { "k", 3 })
        :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(10)
          :with_timestamp_assigner(function(v) return v[2] end))
      return a:join(b):where(first):equal_to(first):window(weir.windows.tumbling_event_time(10))
        :apply(function(l, r) return l[2] .. "-" .. r[2] end)
    end)
    eq(got, { "1-4", "1-3", "2-4", "2-3" })
    eq(ts, { 9, 9, 9, 9 })
  end)

  it("sliding windows, allowed lateness and a trigger come from the window layer", function()
    local got = run(function(env)
      local a = env:from_elements({ "k", 1 }, { "k", 6 })
        :assign_timestamps_and_watermarks(punctuated(2))
      local b = env:from_elements({ "k", 4 })
        :assign_timestamps_and_watermarks(punctuated(2))
      return a:co_group(b):where(first):equal_to(first)
        :window(weir.windows.sliding_event_time(10, 5)):allowed_lateness(0)
        :trigger(weir.triggers.event_time())
        :apply(function(key, ls, rs, out) out(("%s %d %d"):format(key, #ls, #rs)) end)
    end)
    eq(sorted(got), { "k 1 0", "k 1 1", "k 2 1" }) -- [5,15), [-5,5), [0,10)
  end)

  it("keys of the two sides compare as keys do (a number and a string differ)", function()
    local got = run(function(env)
      local a = env:from_elements({ 1, 0 }):assign_timestamps_and_watermarks(punctuated(2))
      local b = env:from_elements({ "1", 0 }, { 1, 1 }):assign_timestamps_and_watermarks(
        punctuated(2))
      return a:co_group(b):where(first):equal_to(first)
        :window(weir.windows.tumbling_event_time(5))
        :apply(function(key, ls, rs, out) out(("%s:%s %d %d"):format(type(key), key, #ls, #rs)) end)
    end)
    eq(sorted(got), { "number:1 1 1", "string:1 0 1" })
  end)

  it("a join function returning nil fails the fire, naming the join", function()
    local env = weir.env()
    local a = env:from_elements({ "k", 1 }):assign_timestamps_and_watermarks(punctuated(2))
    a:join(a):where(first):equal_to(first):window(weir.windows.tumbling_event_time(5))
      :apply(function() return nil end):sink(function() end)
    raises(function() env:execute() end, "join tumbling_event_time apply (", "join_spec.lua:",
      "the join function returned nil")
  end)

  it("rejects bad arguments naming the script line", function()
    local env = weir.env()
    local a, b = env:from_elements(1), env:from_elements(2)
    raises(function() a:join(b):equal_to(first) end, "join_spec.lua:",
      "join: equal_to: call where(fa) first")
    raises(function() a:join(b):where(first):window(weir.windows.tumbling_event_time(5)) end,
      "join: window: call where(fa):equal_to(fb) first")
    raises(function() a:co_group(b):where(first):equal_to(first):apply(print) end,
      "co_group: apply: call window(assigner) first")
    raises(function() a:join(b):where(42) end, "join: where: expected a key selector function")
    raises(function() a:join(b):where(first):equal_to(first):window(5) end,
      "join: window: expected a window assigner")
    raises(function() a:join(b):where(first):equal_to(first)
      :window(weir.windows.tumbling_event_time(5)):apply("x") end,
      "join: apply: expected a function fn(l, r) -> v")
    raises(function() a:join(42) end, "join: expected a stream")
    raises(function() a:join(b):were(first) end, "JoinedStreams has no method 'were'")
    env.executed = true -- built only for its build errors
  end)

  it("a join never applied is a build error at execute", function()
    local env = weir.env()
    local a = env:from_elements(1)
    a:join(a):where(first)
    a:print()
    raises(function() env:execute() end, "join_spec.lua:", "join(...) has no window function")
    env.executed = true -- built only for its build errors
  end)
end)

spec.finish()
