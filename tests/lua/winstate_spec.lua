-- Specs for the window layer's enumeration (weir.windowing.state) over the one home of each
-- operator's state (weir.winstate for the general operator, weir.aggstate for the fast one). On
-- random jobs, on both operators, a snapshot taken between two records must say exactly what
-- the operator does later: the same job run again on the records before the snapshot fires,
-- after the fires it had made by then, exactly the snapshot's open windows with the snapshot's
-- contents, in the order of the snapshot's timers (at end of input, the +inf watermark fires
-- every timer left); on the whole input each open window fires first once the watermark reaches
-- what it waits for. Key groups and the key and key-group filters are checked too.
local spec = require("spec")
local weir = require("weir")
local C = require("weir.ffi")
local keys = require("weir.keys")
local windowing = require("weir.windowing")
local format = require("weir.format")
local winjob = require("lib.winjob")
local it, eq = spec.it, spec.eq
local W = weir.windows
local INF = math.huge

local function format_id(key, w, text)
  return format.value(key) .. " " .. (text or tostring(w))
end

-- The accumulator counts (x 1000) and sums e[3] (1 to 9): count and contents both show in it.
local counted = {
  create = function() return 0 end,
  add = function(e, acc) return acc + 1000 + e[3] end,
  result = function(acc) return acc end,
  merge = function(a, b) return a + b end,
}

local CASES = {
  { name = "tumbling", assigner = function() return W.tumbling_event_time(10) end,
    fn = "aggregate", fast = "tumbling" },
  { name = "tumbling with lateness", assigner = function() return W.tumbling_event_time(10, 3) end,
    fn = "aggregate", lateness = 15, fast = "tumbling" },
  { name = "sliding 30/10 with lateness",
    assigner = function() return W.sliding_event_time(30, 10) end, fn = "aggregate",
    lateness = 12, fast = "sliced" },
  { name = "sessions", assigner = function() return W.event_time_session(8) end,
    fn = "process", lateness = 5 },
}

-- One run: the window function's fires { key, window, contents, watermark }, and the snapshot
-- taken before record `at` (with the fires made by then), when at is given.
local function run(case, records, fast, at, maxp)
  local watch = winjob.watch()
  local fires, snap = {}, nil
  local seen = 0
  local function snapshot()
    local n = watch.nodes[#watch.nodes].node
    local st = windowing.state(n, n.instances[1])
    snap = { state = st, fired = #fires, by_key = {}, by_group = {} }
    for _, e in ipairs(st.windows) do -- the filters, while the state is there
      snap.by_key[e.key] = windowing.state(n, n.instances[1], { key = e.key })
      snap.by_group[e.key_group] = windowing.state(n, n.instances[1], { key_group = e.key_group })
    end
  end
  local configure = function(w)
    if case.fn == "process" then
      return w:process(function(key, ctx, elements, out)
        local vals = {}
        for i, e in ipairs(elements) do vals[i] = e[2] .. "/" .. e[3] end
        fires[#fires + 1] = { key, tostring(ctx:window()), table.concat(vals, " "),
                              ctx:current_watermark() }
        out(1)
      end)
    end
    return w:aggregate(counted, function(key, ctx, accs, out)
      fires[#fires + 1] = { key, tostring(ctx:window()), accs[1], ctx:current_watermark() }
      out(1)
    end)
  end
  local ok, err = pcall(winjob.run, records, case.assigner(), configure, {
    env = { parallelism = 1, max_parallelism = maxp }, lateness = case.lateness, fast = fast,
    each = function()
      seen = seen + 1
      if seen == at then
        snapshot()
      end
    end,
  })
  watch.stop()
  assert(ok, err)
  if at and not snap then
    snapshot() -- `at` past the end: the state at the end of the records (before +inf)
  end
  return fires, snap
end

local function contents_text(case, c)
  if case.fn ~= "process" then
    return c
  end
  local vals = {}
  for i, e in ipairs(c) do vals[i] = e[2] .. "/" .. e[3] end
  return table.concat(vals, " ")
end

local function check_round(case, fast, round)
  local records = winjob.random_records(math.random(1, 50), { "a", "b", 0, 7, -3, 2.5, { 1, "x" } })
  local at = math.random(1, #records + 1)
  local maxp = ({ 1, 7, 128, 4096 })[math.random(1, 4)]
  local all, snap = run(case, records, fast, at, maxp)
  local prefix = {}
  for i = 1, at - 1 do prefix[i] = records[i] end
  local again = run(case, prefix, fast)
  local st = snap.state
  local byid = {}
  for _, e in ipairs(st.windows) do
    byid[format_id(e.key, e.window)] = e
    -- key groups as the hash exchange computes them; counts in the accumulator
    eq(e.key_group, C.weir_keygroup_of(keys.java_hash(e.key), maxp))
    if case.fn == "process" then
      eq(e.count, #e.contents)
    else
      eq(e.count, math.floor(e.contents / 1000))
    end
    eq(e.cleanup, e.window:max_timestamp() + (case.lateness or 0))
    if e.status == "open" then
      eq(e.fired, e.fired and case.fn == "process") -- a grown session may have fired before
      eq(e.waits, { what = "watermark", time = e.window:max_timestamp() })
    else
      eq(e.status, "kept")
      eq(e.fired, true)
      eq(e.waits, { what = "cleanup", time = e.cleanup })
    end
  end
  -- what the snapshot promises: the fires made so far, then its open windows in timer order
  local want = {}
  for i = 1, snap.fired do want[i] = all[i] end
  for _, t in ipairs(st.timers) do
    local e = byid[format_id(t.key, t.window)]
    assert(e, ("round %d: timer of a window the snapshot does not list"):format(round))
    if t.time == t.window:max_timestamp() and e.status == "open" then
      want[#want + 1] = { e.key, tostring(e.window), contents_text(case, e.contents), INF }
    end
  end
  local okk, err = pcall(eq, again, want)
  if not okk then
    error(("round %d (%s, snapshot before record %d): %s"):format(round,
      fast and "fast" or "general", at, err), 0)
  end
  -- on the whole input, each open window fires first when the watermark reaches its promise
  for _, e in ipairs(st.windows) do
    if e.status == "open" then
      for i = snap.fired + 1, #all do
        local f = all[i]
        if format_id(f[1], nil, f[2]) == format_id(e.key, e.window) then
          assert(f[4] >= e.waits.time, ("round %d: %s fired at watermark %s, before %s")
            :format(round, tostring(e.window), tostring(f[4]), tostring(e.waits.time)))
          break
        end
      end
    end
  end
  -- the filters: by key and by key group, exactly the matching part
  for _, e in ipairs(st.windows) do
    local by_key = snap.by_key[e.key]
    for _, x in ipairs(by_key.windows) do
      eq(x.key, e.key)
    end
    local by_group = snap.by_group[e.key_group]
    local n = 0
    for _, x in ipairs(st.windows) do
      if x.key_group == e.key_group then n = n + 1 end
    end
    eq(#by_group.windows, n)
    for _, t in ipairs(by_group.timers) do
      eq(t.key_group, e.key_group)
    end
  end
  return #st.windows, #st.timers
end

for _, case in ipairs(CASES) do
  for _, fast in ipairs(case.fast and { true, false } or { false }) do
    it(("%s on the %s operator: 80 random snapshots say what the operator does later")
        :format(case.name, fast and "fast" or "general"), function()
      math.randomseed(11)
      local windows, timers = 0, 0
      for round = 1, 80 do
        local w, t = check_round(case, fast, round)
        windows, timers = windows + w, timers + t
      end
      assert(windows > 200 and timers > 200, ("windows %d, timers %d"):format(windows, timers))
    end)
  end
end

it("global_state per key, window_state per window, trigger state by name", function()
  local watch = winjob.watch()
  local st
  winjob.run({ { "a", 1, 1 }, { "a", 2, 1 }, { "b", 3, 1 }, { wm = 4 }, { "a", 5, 1 } },
    W.global(), function(w)
      return w:process(function(key, ctx, elements, out)
        ctx:global_state().n = (ctx:global_state().n or 0) + 1
        ctx:window_state().seen = #elements
        out({ key, #elements })
      end)
    end, {
      trigger = weir.triggers.count(2),
      each = function(e)
        if e[2] == 5 then
          local n = watch.nodes[1].node
          st = windowing.state(n, n.instances[1])
        end
      end,
    })
  watch.stop()
  eq(#st.windows, 2)
  local a, b = st.windows[1], st.windows[2]
  eq({ a.key, a.count, a.fired, a.window_state, a.trigger_state, a.waits.what, a.waits.have },
    { "a", 2, true, { seen = 2 }, nil, "count", 0 })
  eq({ b.key, b.count, b.fired, b.trigger_state, a.status, a.cleanup },
    { "b", 1, false, { count = 1 }, "open", INF })
  eq(st.global_state, { { key = "a", key_group = windowing.key_group(watch.nodes[1].node, "a"),
                          state = { n = 1 } } })
  eq(st.timers, {})
end)

spec.finish()
