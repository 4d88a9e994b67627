-- Specs for triggers and evictors (SEMANTICS §6, §7): each built-in is paired with a Lua
-- re-implementation written as a user would (weir.trigger / weir.evictor), and both must
-- give the same output on the same input, with and without merging (session) windows.
local spec = require("spec")
local weir = require("weir")
local it, eq = spec.it, spec.eq
local W, T, E = weir.windows, weir.triggers, weir.evictors
local INF = math.huge

local winjob = require("lib.winjob")

local RECORDS = {
  { "a", 1000, 1 }, { "b", 1500, 7 }, { "a", 2500, 2 }, { wm = 2000 }, { "a", 4000, 9 },
  { "a", 9999, 3 }, { wm = 9000 }, { "b", 6000, 1 }, { "a", 12000, 4 }, { wm = 10500 },
  { "a", 8000, 5 }, { "b", 15000, 8 }, { "a", 13000, 2 }, { wm = 16000 }, { "a", 17500, 6 },
  { "a", 30000, 1 }, { wm = INF },
}

local function run(assigner, trigger, evictor, lateness)
  return (winjob.run(RECORDS, assigner, function(w)
    return w:process(function(key, ctx, elements, out)
      local vals = {}
      for i, e in ipairs(elements) do vals[i] = e[3] end
      out(("%s %s wm=%s [%s]"):format(key, tostring(ctx:window()),
        tostring(ctx:current_watermark()), table.concat(vals, " ")))
    end)
  end, { trigger = trigger, evictor = evictor, lateness = lateness or 0 }))
end

-- Lua re-implementations of the built-ins, written against the public trigger contract.
local function lua_event_time()
  return weir.trigger{
    on_element = function(_, _, _, w, ctx)
      if w:max_timestamp() <= ctx:current_watermark() then return weir.FIRE end
      ctx:register_event_time_timer(w:max_timestamp())
      return weir.CONTINUE
    end,
    on_event_time = function(_, t, w)
      return t == w:max_timestamp() and weir.FIRE or weir.CONTINUE
    end,
    clear = function(_, w, ctx) ctx:delete_event_time_timer(w:max_timestamp()) end,
    on_merge = function(_, w, ctx)
      if w:max_timestamp() > ctx:current_watermark() then
        ctx:register_event_time_timer(w:max_timestamp())
      end
    end,
  }
end

local function lua_count(n)
  return weir.trigger{
    on_element = function(_, _, _, _, ctx)
      local s = ctx:state("n")
      local c = (s:get() or 0) + 1
      if c >= n then s:clear() return weir.FIRE end
      s:set(c)
      return weir.CONTINUE
    end,
    clear = function(_, _, ctx) ctx:state("n"):clear() end,
    on_merge = function(_, _, ctx) ctx:merge_state("n", function(a, b) return a + b end) end,
  }
end

local function lua_purging(inner)
  local function p(r)
    return (r == weir.FIRE or r == weir.FIRE_AND_PURGE) and weir.FIRE_AND_PURGE or r
  end
  return weir.trigger{
    on_element = function(_, v, ts, w, ctx) return p(inner:on_element(v, ts, w, ctx)) end,
    on_event_time = function(_, t, w, ctx) return p(inner:on_event_time(t, w, ctx)) end,
    on_processing_time = function(_, t, w, ctx)
      return p(inner:on_processing_time(t, w, ctx))
    end,
    clear = function(_, w, ctx) inner:clear(w, ctx) end,
    on_merge = function(_, w, ctx) inner:on_merge(w, ctx) end,
  }
end

local function lua_continuous(iv)
  return weir.trigger{
    on_element = function(_, _, ts, w, ctx)
      local m = w:max_timestamp()
      if m <= ctx:current_watermark() then return weir.FIRE end
      ctx:register_event_time_timer(m)
      local s = ctx:state("next")
      if s:get() == nil then
        local nxt = math.min(ts - math.fmod(ts, iv) + iv, m)
        s:set(nxt)
        ctx:register_event_time_timer(nxt)
      end
      return weir.CONTINUE
    end,
    on_event_time = function(_, t, w, ctx)
      if t == w:max_timestamp() then return weir.FIRE end
      local s = ctx:state("next")
      if s:get() == t then
        local nxt = math.min(t + iv, w:max_timestamp())
        s:set(nxt)
        ctx:register_event_time_timer(nxt)
        return weir.FIRE
      end
      return weir.CONTINUE
    end,
    clear = function(_, _, ctx)
      local s = ctx:state("next")
      if s:get() then ctx:delete_event_time_timer(s:get()) s:clear() end
    end,
    on_merge = function(_, _, ctx)
      local t = ctx:merge_state("next", math.min)
      if t then ctx:register_event_time_timer(t) end
    end,
  }
end

local function lua_delta(th, fn)
  return weir.trigger{
    on_element = function(_, v, _, _, ctx)
      local s = ctx:state("last")
      local last = s:get()
      if last == nil then s:set(v) return weir.CONTINUE end
      if fn(last, v) > th then s:set(v) return weir.FIRE end
      return weir.CONTINUE
    end,
    clear = function(_, _, ctx) ctx:state("last"):clear() end,
  }
end

local diff = function(a, b) return math.abs(b[3] - a[3]) end

local PAIRS = {
  { "event_time", T.event_time, lua_event_time, true },
  { "count(2)", function() return T.count(2) end, function() return lua_count(2) end, true },
  { "purging(count(2))", function() return T.purging(T.count(2)) end,
    function() return lua_purging(lua_count(2)) end, true },
  { "purging(event_time)", function() return T.purging(T.event_time()) end,
    function() return lua_purging(lua_event_time()) end, true },
  { "continuous_event_time(3s)", function() return T.continuous_event_time(3000) end,
    function() return lua_continuous(3000) end, true },
  { "delta(4)", function() return T.delta(4, diff) end, function() return lua_delta(4, diff) end,
    false },
}

for _, p in ipairs(PAIRS) do
  spec.describe(p[1], function()
    it("matches its Lua re-implementation on tumbling windows with lateness", function()
      local builtin = run(W.tumbling_event_time(10000), p[2](), nil, 5000)
      assert(#builtin > 0, "the built-in fired nothing")
      eq(run(W.tumbling_event_time(10000), p[3](), nil, 5000), builtin)
    end)
    it("matches on sliding windows", function()
      eq(run(W.sliding_event_time(10000, 4000), p[3]()),
         run(W.sliding_event_time(10000, 4000), p[2]()))
    end)
    if p[4] then
      it("matches on merging session windows", function()
        local builtin = run(W.event_time_session(3000), p[2](), nil, 1000)
        assert(#builtin > 0, "the built-in fired nothing")
        eq(run(W.event_time_session(3000), p[3](), nil, 1000), builtin)
      end)
    end
  end)
end

it("continuous_event_time fires at every multiple of the interval the watermark passes", function()
  -- fire times 3000, 6000, 9000 (multiples since the first element), all passed by wm 9000
  local got = {}
  for _, line in ipairs(run(W.tumbling_event_time(10000), T.continuous_event_time(3000))) do
    if line:sub(1, 1) == "a" then got[#got + 1] = line end
  end
  eq({ got[1], got[2], got[3] }, { "a [0, 10000) wm=9000 [1 2 9 3]",
    "a [0, 10000) wm=9000 [1 2 9 3]", "a [0, 10000) wm=9000 [1 2 9 3]" })
end)

-- Evictors ------------------------------------------------------------------------------------

local function lua_keep_last(n, after)
  local function f(_, elements, size)
    local drop = size - n
    for i = 1, drop do
      elements:remove(1 + 0 * i)
    end
  end
  return weir.evictor{ evict_before = not after and f or nil, evict_after = after and f or nil }
end

local function lua_time(keep, after)
  local function f(_, elements)
    local max = -INF
    for _, _, ts in elements:iter() do max = math.max(max, ts) end
    for i, _, ts in elements:iter() do
      if ts <= max - keep then elements:remove(i) end
    end
  end
  return weir.evictor{ evict_before = not after and f or nil, evict_after = after and f or nil }
end

local function lua_delta_ev(th, fn, after)
  local function f(_, elements, size)
    local last
    for i, v in elements:iter() do if i == size then last = v end end
    for i, v in elements:iter() do
      if fn(v, last) >= th then elements:remove(i) end
    end
  end
  return weir.evictor{ evict_before = not after and f or nil, evict_after = after and f or nil }
end

local EVICTORS = {
  { "count(2)", function(a) return E.count(2, { after = a }) end,
    function(a) return lua_keep_last(2, a) end },
  { "time(3s)", function(a) return E.time(3000, { after = a }) end,
    function(a) return lua_time(3000, a) end },
  { "delta(3)", function(a) return E.delta(3, diff, { after = a }) end,
    function(a) return lua_delta_ev(3, diff, a) end },
}

for _, ev in ipairs(EVICTORS) do
  for _, after in ipairs({ false, true }) do
    spec.describe(("evictor %s, after = %s"):format(ev[1], tostring(after)), function()
      it("matches its Lua re-implementation and evicts for good", function()
        local trig = function() return T.count(2) end
        local builtin = run(W.global(), trig(), ev[2](after))
        assert(#builtin > 0)
        eq(run(W.global(), trig(), ev[3](after)), builtin)
      end)
    end)
  end
end

it("count evictor before keeps the last n, for good (nothing is purged)", function()
  eq(run(W.global(), T.count(3), E.count(2)),
    { "a GlobalWindow wm=2000 [2 9]", "a GlobalWindow wm=10500 [4 5]",
      "b GlobalWindow wm=10500 [1 8]", "a GlobalWindow wm=16000 [6 1]" })
end)

spec.finish()
