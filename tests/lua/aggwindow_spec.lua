-- Specs for weir.aggwindow, the fast window operator: on random inputs (out of order, late,
-- within allowed lateness, watermarks anywhere) it must give exactly what weir.windowop gives —
-- the same fires with the same values, in the same order, and the same late records.
local spec = require("spec")
local weir = require("weir")
local aggwindow = require("weir.aggwindow")
local it, eq = spec.it, spec.eq
local W = weir.windows

local winjob = require("lib.winjob")
local punctuated, count_sum = winjob.punctuated, winjob.count_sum

local function max_reduce(a, b)
  if b[3] > a[3] then return b end
  return a
end

-- Each case: the assigner, allowed lateness, and how the window function is set up.
local CASES = {
  { name = "tumbling, aggregate", assigner = function() return W.tumbling_event_time(10) end,
    lateness = 0, fn = "aggregate" },
  { name = "tumbling with offset and lateness, reduce",
    assigner = function() return W.tumbling_event_time(10, 3) end, lateness = 15, fn = "reduce" },
  { name = "tumbling, lateness, aggregate + process",
    assigner = function() return W.tumbling_event_time(10) end, lateness = 7, fn = "process" },
  { name = "sliding 30/10, aggregate",
    assigner = function() return W.sliding_event_time(30, 10) end, lateness = 0, fn = "aggregate" },
  { name = "sliding 30/10, lateness, aggregate + process",
    assigner = function() return W.sliding_event_time(30, 10) end, lateness = 25, fn = "process" },
  { name = "sliding 20/5 with offset, lateness",
    assigner = function() return W.sliding_event_time(20, 5, 2) end, lateness = 4,
    fn = "aggregate" },
  -- sliced reduce (numbers: the record's value and key, v * 10 + key index), min and max
  -- merges (two stacks of merged slices), and reduce of records (the general operator)
  { name = "sliding 30/10, reduce of numbers (a sum)",
    assigner = function() return W.sliding_event_time(30, 10) end, lateness = 0,
    fn = "reduce_sum" },
  { name = "sliding 40/10, lateness, reduce of numbers (a max) + process",
    assigner = function() return W.sliding_event_time(40, 10) end, lateness = 20,
    fn = "reduce_max" },
  { name = "sliding 50/5, aggregate with a min merge",
    assigner = function() return W.sliding_event_time(50, 5) end, lateness = 0, fn = "min" },
  { name = "sliding 30/10, lateness, aggregate with a max merge + process",
    assigner = function() return W.sliding_event_time(30, 10) end, lateness = 15, fn = "max" },
  -- built-in aggregates (weir.aggregates): their elements applied in C in batches, listed
  -- (env:status()) every fifth record, mid-batch
  { name = "sliding 30/10, built-in count", builtin = true,
    assigner = function() return W.sliding_event_time(30, 10) end, lateness = 0, fn = "b_count" },
  { name = "sliding 20/5 with offset, lateness, built-in sum + process", builtin = true,
    assigner = function() return W.sliding_event_time(20, 5, 2) end, lateness = 4,
    fn = "b_sum" },
  { name = "sliding 50/5, built-in min", builtin = true,
    assigner = function() return W.sliding_event_time(50, 5) end, lateness = 0, fn = "b_min" },
  { name = "sliding 30/10, lateness, built-in max", builtin = true,
    assigner = function() return W.sliding_event_time(30, 10) end, lateness = 15, fn = "b_max" },
  { name = "sliding 30/10, lateness, reduce of records (the general operator)",
    assigner = function() return W.sliding_event_time(30, 10) end, lateness = 10,
    fn = "reduce" },
}

-- Lua triggers on tumbling windows (the fast operator runs them while they use only the
-- window's max-timestamp timer; the others move to the general operator where they ask more).
local function at_end(_, time, w)
  return time == w:max_timestamp() and weir.FIRE or weir.CONTINUE
end
local function register_end(ctx, w)
  ctx:register_event_time_timer(w:max_timestamp())
end
local TRIGGERS = {
  ["event_time in Lua"] = function()
    return weir.trigger{
      on_element = function(_, _, _, w, ctx)
        if w:max_timestamp() <= ctx:current_watermark() then return weir.FIRE end
        register_end(ctx, w)
        return weir.CONTINUE
      end,
      on_event_time = at_end,
      clear = function(_, w, ctx) ctx:delete_event_time_timer(w:max_timestamp()) end,
    }
  end,
  -- early fires on an element's value, FIRE_AND_PURGE and PURGE
  ["FIRE early, FIRE_AND_PURGE, PURGE"] = function()
    return weir.trigger{
      on_element = function(_, e, _, w, ctx)
        register_end(ctx, w)
        if e[3] == 9 then return weir.FIRE end
        if e[3] == 1 then return weir.FIRE_AND_PURGE end
        if e[3] == 2 then return weir.PURGE end
        return weir.CONTINUE
      end,
      on_event_time = at_end,
    }
  end,
  -- no timer of its own: the cleanup timer at the end still fires on_event_time
  ["no timers, FIRE on the cleanup timer"] = function()
    return weir.trigger{
      on_element = function() return weir.CONTINUE end,
      on_event_time = function() return weir.FIRE end,
    }
  end,
  -- deletes and registrations again: the timer moves behind the others of its time
  ["deletes its timer"] = function()
    return weir.trigger{
      on_element = function(_, e, _, w, ctx)
        if e[3] % 2 == 1 then
          ctx:delete_event_time_timer(w:max_timestamp())
        else
          register_end(ctx, w)
        end
        if e[3] == 4 then
          ctx:delete_event_time_timer(w:max_timestamp())
          register_end(ctx, w)
        end
        return e[3] == 7 and weir.FIRE or weir.CONTINUE
      end,
      on_event_time = at_end,
    }
  end,
  -- the watermark on every call: on_element's (the push has it), on_event_time's and clear's
  -- (asked for then); the results depend on it
  -- moves at a later timer or clear than the first: mid-chunk, after windows before it fired
  ["state at the third timer (moves mid-chunk)"] = function()
    local timers = 0
    return weir.trigger{
      on_element = function(_, _, _, w, ctx) register_end(ctx, w) return weir.CONTINUE end,
      on_event_time = function(_, time, w, ctx)
        timers = timers + 1
        if timers >= 3 then
          local s = ctx:state("n")
          s:set((s:get() or 0) + 1)
        end
        return at_end(nil, time, w)
      end,
    }
  end,
  ["state in the fourth clear (moves mid-chunk's cleanup)"] = function()
    local clears = 0
    return weir.trigger{
      on_element = function(_, e, _, w, ctx)
        register_end(ctx, w)
        return e[3] == 5 and weir.FIRE or weir.CONTINUE
      end,
      on_event_time = at_end,
      clear = function(_, _, ctx)
        clears = clears + 1
        if clears >= 4 then
          ctx:state("gone"):clear()
        end
      end,
    }
  end,
  ["reads the watermark in every call"] = function()
    return weir.trigger{
      on_element = function(_, e, _, w, ctx)
        register_end(ctx, w)
        local wm = ctx:current_watermark()
        if wm > -math.huge and (wm + e[3]) % 3 == 0 then return weir.FIRE end
        return weir.CONTINUE
      end,
      on_event_time = function(_, time, w, ctx)
        if ctx:current_watermark() % 2 == 0 then return weir.FIRE_AND_PURGE end
        return at_end(nil, time, w)
      end,
      clear = function(_, w, ctx)
        if ctx:current_watermark() < w:max_timestamp() then error("clear before its time") end
        ctx:delete_event_time_timer(w:max_timestamp())
      end,
    }
  end,
  ["purging(event_time())"] = function()
    return weir.triggers.purging(weir.triggers.event_time())
  end,
  -- these move to the general operator: state on an element, a timer at another time, state
  -- first asked for at a timer, in clear
  ["count(3) (moves: state)"] = function() return weir.triggers.count(3) end,
  ["continuous_event_time(4) (moves: another time)"] = function()
    return weir.triggers.continuous_event_time(4)
  end,
  ["state at the timer (moves mid-watermark)"] = function()
    return weir.trigger{
      on_element = function(_, _, _, w, ctx) register_end(ctx, w) return weir.CONTINUE end,
      on_event_time = function(_, time, w, ctx)
        local s = ctx:state("n")
        s:set((s:get() or 0) + 1)
        return at_end(nil, time, w)
      end,
      clear = function(_, _, ctx) ctx:state("n"):clear() end,
    }
  end,
  ["state in clear (moves mid-cleanup)"] = function()
    return weir.trigger{
      on_element = function(_, e, _, w, ctx)
        register_end(ctx, w)
        return e[3] == 5 and weir.FIRE or weir.CONTINUE
      end,
      on_event_time = at_end,
      clear = function(_, _, ctx) ctx:state("gone"):clear() end,
    }
  end,
}
local TRIGGER_ORDER = { "event_time in Lua", "FIRE early, FIRE_AND_PURGE, PURGE",
  "no timers, FIRE on the cleanup timer", "deletes its timer", "purging(event_time())",
  "count(3) (moves: state)", "continuous_event_time(4) (moves: another time)",
  "state at the timer (moves mid-watermark)", "state in clear (moves mid-cleanup)",
  "reads the watermark in every call", "state at the third timer (moves mid-chunk)",
  "state in the fourth clear (moves mid-chunk's cleanup)" }
for i, name in ipairs(TRIGGER_ORDER) do
  local fns = { "aggregate", "process", "reduce" }
  CASES[#CASES + 1] = { name = "tumbling, Lua trigger " .. name .. ", " .. fns[i % 3 + 1],
    assigner = function() return W.tumbling_event_time(10) end, lateness = 0,
    fn = fns[i % 3 + 1], trigger = TRIGGERS[name] }
end

-- Numbers for the reduce cases: v * 10 + the key's index in RANDOM_KEYS, keyed by that key.
local function as_number(e)
  for i, k in ipairs(winjob.RANDOM_KEYS) do
    if k == e[1] then
      return e[3] * 10 + i
    end
  end
  error("a key not in RANDOM_KEYS")
end
local function number_key(n)
  return winjob.RANDOM_KEYS[n % 10]
end

local function extreme(pick, start)
  return {
    create = function() return start end,
    add = function(e, acc) return pick(acc, e[3] * 7 - e[2]) end,
    result = function(acc) return acc end,
    merge = function(a, b) return pick(a, b) end,
  }
end

-- The window operator's part of env:status(): what both operators must show alike (all of it
-- but the valve's channels, which are the job's), with whether each window has fired (a Lua
-- trigger's early FIRE: an open window that fired).
local function window_status(status)
  for _, op in ipairs(status.operators) do
    local sub = op.subtasks[1]
    if sub.windows then
      local windows = {}
      for i, w in ipairs(sub.windows) do
        windows[i] = ("%s %s %d %s %s"):format(tostring(w.key), tostring(w.window), w.elements,
          tostring(w.waits_for), w.fired and "fired" or "not fired")
      end
      return { watermark = sub.watermark, open = sub.open_windows, elements = sub.elements,
               next_event_timer = sub.next_event_timer, windows = windows,
               late_dropped = op.late_dropped }
    end
  end
end

-- env:metrics() of the window operator, but for its store's bytes (the operators' C state
-- differs by design).
local function window_metrics(metrics)
  for label, m in pairs(metrics) do
    if label:find("^window") then
      return { label = label, open_windows = m.open_windows, elements = m.elements,
               event_timers = m.event_timers, processing_timers = m.processing_timers,
               late_dropped = m.late_dropped }
    end
  end
end

---Runs records into case's window on the fast (or the general) operator: the fires, the late
---records, how many window nodes the fast operator ran, and what env:status() showed of the
---window every fifth record (before it reached the window), at the end, and env:metrics().
local function run(case, records, fast)
  local used = aggwindow.used
  local seen, views = 0, {}
  local configure = function(windowed)
    if case.fn == "reduce" then
      return windowed:reduce(max_reduce, function(key, ctx, elements, out)
        out({ key, tostring(ctx:window()), elements[1][2], elements[1][3] })
      end)
    elseif case.fn == "reduce_sum" then
      return windowed:reduce(function(a, b) return a + b end)
    elseif case.fn == "reduce_max" then
      return windowed:reduce(math.max, function(key, ctx, elements, out)
        out({ key, tostring(ctx:window()), elements[1], ctx:current_watermark() })
      end)
    elseif case.fn == "min" then
      return windowed:aggregate(extreme(math.min, math.huge))
    elseif case.fn == "max" then
      return windowed:aggregate(extreme(math.max, -math.huge), function(key, ctx, r, out)
        out({ key, tostring(ctx:window()), r[1] })
      end)
    elseif case.fn == "b_count" then
      return windowed:aggregate(weir.aggregates.count())
    elseif case.fn == "b_sum" then
      return windowed:aggregate(weir.aggregates.sum(3), function(key, ctx, r, out)
        out({ key, tostring(ctx:window()), r[1], ctx:current_watermark() })
      end)
    elseif case.fn == "b_min" then
      return windowed:aggregate(weir.aggregates.min(3))
    elseif case.fn == "b_max" then
      return windowed:aggregate(weir.aggregates.max(3))
    elseif case.fn == "process" then
      return windowed:aggregate(count_sum, function(key, ctx, sums, out)
        local ws, gs = ctx:window_state(), ctx:global_state()
        ws.fires = (ws.fires or 0) + 1 -- late firings of a window see its earlier ones
        gs.fires = (gs.fires or 0) + 1
        out({ key, tostring(ctx:window()), sums[1], ctx:current_watermark(), ws.fires, gs.fires,
              ctx:window():max_timestamp(), ctx:window() == ctx:window() })
      end)
    end
    return windowed:aggregate(count_sum)
  end
  local got, lates, env = winjob.run(records, case.assigner(), configure, {
    env = { parallelism = 1 }, lateness = case.lateness, fast = fast,
    trigger = case.trigger and case.trigger(),
    values = case.fn:find("^reduce_") and as_number or nil, key = number_key,
    each = function(_, env)
      seen = seen + 1
      if seen % 5 == 0 then
        views[#views + 1] = window_status(env:status())
      end
    end,
  })
  views[#views + 1] = window_status(env:status())
  views[#views + 1] = window_metrics(env:metrics())
  return got, lates, aggwindow.used - used, views
end

local RANDOM_KEYS, random_records = winjob.RANDOM_KEYS, winjob.random_records

spec.describe("aggwindow equals windowop", function()
  for _, case in ipairs(CASES) do
    it(case.name .. ": 150 random inputs give the same output and late records", function()
      math.randomseed(7)
      local fires, lates_seen, views = 0, 0, 0
      local moves, batches = aggwindow.moves, aggwindow.batches
      for round = 1, 150 do
        local records = random_records(math.random(1, 60))
        local got_fast, late_fast, used, views_fast = run(case, records, true)
        local got_slow, late_slow, _, views_slow = run(case, records, false)
        eq(used, 1)
        local ok, err = pcall(eq, got_fast, got_slow)
        if not ok then
          error(("round %d: fires differ: %s"):format(round, err), 0)
        end
        ok, err = pcall(eq, late_fast, late_slow)
        if not ok then
          error(("round %d: late records differ: %s"):format(round, err), 0)
        end
        ok, err = pcall(eq, views_fast, views_slow)
        if not ok then
          error(("round %d: env:status() or env:metrics() differ: %s"):format(round, err), 0)
        end
        views = views + #views_fast
        fires, lates_seen = fires + #got_fast, lates_seen + #late_fast
      end
      -- a Lua trigger that asks for more than its window's timer moved to the general
      -- operator (in some rounds: where it asked), the others never did
      if case.trigger then
        local moved = aggwindow.moves - moves
        assert((moved > 0) == (case.name:find("(moves", 1, true) ~= nil),
          ("%d moves"):format(moved))
      end
      -- a built-in aggregate's elements went through its batches (and only then)
      assert((aggwindow.batches > batches) == (case.builtin == true), "batches")
      -- the inputs did exercise both: fires and late records
      assert(fires > 150 and lates_seen > 10 and views > 300,
        ("fires %d, late %d, views %d"):format(fires, lates_seen, views))
    end)
  end
end)

-- Many keys: a time's timer bucket gets an entry per key, more than a new bucket has room for
-- (the job's first buckets have room for none, then as many as the bucket before; a full one
-- moves to one of twice the room, weir.timerq.grow), also while the watermark keeps keys'
-- windows firing and new ones registering. Both operators agree.
spec.describe("aggwindow equals windowop with many keys", function()
  local keys = {}
  for i = 1, 300 do
    keys[i] = i
  end
  for _, name in ipairs({ "sliding 30/10, aggregate", "sliding 30/10, built-in count",
                          "sliding 30/10, lateness, aggregate with a max merge + process" }) do
    local case
    for _, c in ipairs(CASES) do
      if c.name == name then
        case = c
      end
    end
    it(name .. ": 300 keys, 4 random inputs give the same output", function()
      math.randomseed(5)
      local fires = 0
      for round = 1, 4 do
        local records = random_records(1500, keys)
        local got_fast, late_fast, used, views_fast = run(case, records, true)
        local got_slow, late_slow, _, views_slow = run(case, records, false)
        eq(used, 1)
        local ok, err = pcall(eq, { got_fast, late_fast, views_fast },
          { got_slow, late_slow, views_slow })
        if not ok then
          error(("round %d: %s"):format(round, err), 0)
        end
        fires = fires + #got_fast
      end
      assert(fires > 4000, ("fires %d"):format(fires))
    end)
  end
end)

-- The edges of the time range (API.md, Time range): timestamps at and near +-2^52, windows,
-- slides, offsets and lateness up to 2^51. Every derived time stays exact, so both operators
-- agree, and with no lateness every element is either in exactly one tumbling fire or late.
local T, D = 2 ^ 52, 2 ^ 51
local EDGE_CASES = {
  { name = "tumbling 10 ms", assigner = function() return W.tumbling_event_time(10) end,
    lateness = 0, fn = "aggregate", conserves = true },
  { name = "tumbling 2^51 with offset 2^51 - 1, lateness 2^51",
    assigner = function() return W.tumbling_event_time(D, D - 1) end, lateness = D,
    fn = "process" },
  { name = "tumbling 2^51 - 1", assigner = function() return W.tumbling_event_time(D - 1) end,
    lateness = 0, fn = "aggregate", conserves = true },
  { name = "tumbling 3 ms with offset -2, lateness 2^51, reduce",
    assigner = function() return W.tumbling_event_time(3, -2) end, lateness = D,
    fn = "reduce" },
  { name = "sliding 2^51 / 2^49, lateness 2^51",
    assigner = function() return W.sliding_event_time(D, 2 ^ 49) end, lateness = D,
    fn = "process" },
  { name = "sliding 30 / 10 with offset 7",
    assigner = function() return W.sliding_event_time(30, 10, 7) end, lateness = 5,
    fn = "aggregate" },
}

---Random records near the ends of the range (and around 0), with watermarks that jump there.
local function edge_records(n)
  local bases = { -T, -T + 40, -D, 0, D, T - 40, T }
  local out, wm = {}, -math.huge
  for _ = 1, n do
    if math.random() < 0.15 then
      local w = bases[math.random(1, #bases)] + math.random(-30, 30)
      if w > wm then
        wm = w
        out[#out + 1] = { wm = wm }
      end
    end
    local ts = bases[math.random(1, #bases)] + math.random(-30, 30)
    ts = math.max(-T, math.min(T, ts))
    out[#out + 1] = { RANDOM_KEYS[math.random(1, #RANDOM_KEYS)], ts, math.random(1, 9) }
  end
  return out
end

spec.describe("aggwindow equals windowop at the edges of the time range", function()
  for _, case in ipairs(EDGE_CASES) do
    it(case.name .. ": 40 random inputs give the same output and late records", function()
      math.randomseed(11)
      local fires, views = 0, 0
      for round = 1, 40 do
        local records = edge_records(math.random(1, 40))
        local got_fast, late_fast, used, views_fast = run(case, records, true)
        local got_slow, late_slow, _, views_slow = run(case, records, false)
        eq(used, 1)
        local ok, err = pcall(eq, got_fast, got_slow)
        if not ok then
          error(("round %d: fires differ: %s"):format(round, err), 0)
        end
        ok, err = pcall(eq, late_fast, late_slow)
        if not ok then
          error(("round %d: late records differ: %s"):format(round, err), 0)
        end
        ok, err = pcall(eq, views_fast, views_slow)
        if not ok then
          error(("round %d: env:status() or env:metrics() differ: %s"):format(round, err), 0)
        end
        views = views + #views_fast
        if case.conserves then
          local total, seen = 0, 0
          for _, e in ipairs(records) do total = total + (e[3] or 0) end
          for _, f in ipairs(got_fast) do
            seen = seen + f
          end
          for _, e in ipairs(late_fast) do seen = seen + e[3] end
          eq(seen, total, ("round %d: out + late"):format(round))
        end
        fires = fires + #got_fast
      end
      assert(fires > 40 and views > 80, ("fires %d, views %d"):format(fires, views))
    end)
  end
  it("windows at the ends are exact", function()
    local case = { assigner = function() return W.tumbling_event_time(10) end, lateness = 0,
                   fn = "process" }
    local recs = { { "a", T, 1 }, { "a", -T, 2 }, { "a", T - 1, 3 } }
    local fast = run(case, recs, true)
    eq(fast, run(case, recs, false))
    eq(#fast, 2)
    local byw = {}
    for _, f in ipairs(fast) do byw[f[2]] = f[3] end
    eq(byw, { ["[4503599627370490, 4503599627370500)"] = 4,
              ["[-4503599627370500, -4503599627370490)"] = 2 })
  end)
end)

-- Two subtasks: the tumbling and Lua-trigger pushes find their subtask by st (weir.aggwindow
-- keeps them by st + 0.5) and a Lua trigger's context is the node's, filled per call with the
-- call's subtask. Each subtask's windows, fires and timers must be the general operator's: a
-- lookup that handed an element to the other subtask, or a context left pointing at it, shows
-- in the views.
spec.describe("aggwindow at parallelism 2", function()
  local function views_of(status)
    for _, op in ipairs(status.operators) do
      if op.subtasks[1].windows then
        local out = {}
        for st, sub in ipairs(op.subtasks) do
          local ws = {}
          for i, w in ipairs(sub.windows) do
            ws[i] = ("%s %s %d %s %s"):format(tostring(w.key), tostring(w.window), w.elements,
              tostring(w.waits_for), w.fired and "fired" or "not fired")
          end
          out[st] = { watermark = sub.watermark, open = sub.open_windows, windows = ws,
                      next_event_timer = sub.next_event_timer }
        end
        return out
      end
    end
  end
  local function run2(t, records, fast)
    local views, seen = {}, 0
    local got, lates, env = winjob.run(records, W.tumbling_event_time(10), function(w)
      return w:aggregate(count_sum, function(key, ctx, sums, out)
        out({ key, tostring(ctx:window()), sums[1], ctx:current_watermark() })
      end)
    end, {
      env = { parallelism = 2 }, fast = fast, trigger = TRIGGERS[t] and TRIGGERS[t](),
      each = function(_, e)
        seen = seen + 1
        if seen % 3 == 0 then
          views[#views + 1] = views_of(e:status())
        end
      end,
    })
    views[#views + 1] = views_of(env:status())
    return got, lates, views
  end
  for _, t in ipairs({ "the built-in event_time", "event_time in Lua",
                       "FIRE early, FIRE_AND_PURGE, PURGE", "deletes its timer",
                       "reads the watermark in every call",
                       "state at the third timer (moves mid-chunk)" }) do
    it(t .. ": each subtask as on the general operator", function()
      math.randomseed(#t * 17)
      local per_st = { 0, 0 }
      for round = 1, 40 do
        local records = random_records(math.random(10, 60))
        local got, lates, views = run2(t, records, true)
        local want, want_lates, want_views = run2(t, records, false)
        local ok, err = pcall(eq, got, want)
        if not ok then
          error(("round %d: fires differ: %s"):format(round, err), 0)
        end
        eq(lates, want_lates)
        ok, err = pcall(eq, views, want_views)
        if not ok then
          error(("round %d: subtasks' views differ: %s"):format(round, err), 0)
        end
        for _, v in ipairs(views) do
          for st = 1, 2 do
            per_st[st] = per_st[st] + #v[st].windows
          end
        end
      end
      -- both subtasks had windows
      assert(per_st[1] > 50 and per_st[2] > 50, ("%d, %d"):format(per_st[1], per_st[2]))
    end)
  end
end)

spec.describe("aggwindow state is visible", function()
  ---Runs records {key, ts, 1} into assigner and returns env:status()'s window operator as it
  ---was when the record marked `look` arrived (before it reached the window).
  local function status_at(assigner, records, look, fast)
    aggwindow.disabled = not fast
    local env = weir.env{ parallelism = 1 }
    local seen
    env:from_collection(records)
      :map(function(e)
        if e == look then
          for _, op in ipairs(env:status().operators) do
            if op.subtasks[1].windows then seen = op.subtasks[1] end
          end
        end
        return e
      end)
      :assign_timestamps_and_watermarks(punctuated)
      :key_by(function(e) return e[1] end)
      :window(assigner)
      :aggregate(count_sum)
      :collect()
    env:execute()
    aggwindow.disabled = false
    local windows = {}
    for _, w in ipairs(seen.windows) do
      windows[#windows + 1] = ("%s %s %d"):format(w.key, tostring(w.window), w.elements)
    end
    table.sort(windows)
    return { open = seen.open_windows, elements = seen.elements, windows = windows }
  end

  local records = { { "a", 1, 1 }, { "a", 2, 1 }, { "b", 3, 1 }, { "a", 12, 1 }, { "a", 13, 1 },
                    { "a", 14, 1 }, { "b", 25, 1 } }
  it("tumbling: open windows and element counts as the general operator's", function()
    local look = records[#records]
    local fast = status_at(W.tumbling_event_time(10), records, look, true)
    eq(fast, status_at(W.tumbling_event_time(10), records, look, false))
    eq(fast.elements, 6)
    eq(fast.windows, { "a [0, 10) 2", "a [10, 20) 3", "b [0, 10) 1" })
  end)
  it("sliced: elements added through a kept slice pointer are counted", function()
    local look = records[#records]
    local fast = status_at(W.sliding_event_time(20, 10), records, look, true)
    eq(fast, status_at(W.sliding_event_time(20, 10), records, look, false))
    eq(fast.windows, { "a [-10, 10) 2", "a [0, 20) 5", "a [10, 30) 3", "b [-10, 10) 1",
                       "b [0, 20) 1" })
  end)
end)

spec.describe("aggwindow applies", function()
  it("to sliding windows only with merge and a number accumulator", function()
    local env = weir.env{ parallelism = 1 }
    local agg = { create = function() return {} end, add = function(_, a) return a end,
                  result = function() return 1 end, merge = function(a) return a end }
    env:from_collection({ { "a", 1 } })
      :assign_timestamps_and_watermarks(punctuated)
      :key_by(function(e) return e[1] end)
      :window(W.sliding_event_time(30, 10))
      :aggregate(agg)
      :collect()
    local used = aggwindow.used
    env:execute()
    eq(aggwindow.used - used, 0)
  end)
  it("weir explain says which operator runs each window", function()
    local env = weir.env{ parallelism = 1 }
    local keyed = env:from_collection({ { "a", 1, 1 } })
      :assign_timestamps_and_watermarks(punctuated)
      :key_by(function(e) return e[1] end)
    keyed:window(W.tumbling_event_time(10)):aggregate(count_sum):collect()
    keyed:window(W.sliding_event_time(30, 10)):aggregate(count_sum):collect()
    keyed:window(W.sliding_event_time(30, 10)):reduce(max_reduce):collect()
    keyed:window(W.tumbling_event_time(10)):trigger(TRIGGERS["event_time in Lua"]())
      :aggregate(count_sum):collect()
    keyed:window(W.tumbling_event_time(10)):trigger(TRIGGERS["event_time in Lua"]())
      :allowed_lateness(5):aggregate(count_sum):collect()
    local text = require("weir.explain").text(require("weir.plan").build(env))
    local kinds = {}
    for kind in text:gmatch("{(%a+ window operator[^}]*)}") do
      kinds[#kinds + 1] = kind
    end
    eq(kinds, { "fast window operator: tumbling", "fast window operator: sliced",
                "fast window operator: sliced", "fast window operator: triggered",
                "general window operator" })
    env:execute()
  end)
  it("not when the job says slicing = false", function()
    local env = weir.env{ parallelism = 1, slicing = false }
    env:from_collection({ { "a", 1, 1 } })
      :assign_timestamps_and_watermarks(punctuated)
      :key_by(function(e) return e[1] end)
      :window(W.sliding_event_time(30, 10))
      :aggregate(count_sum)
      :collect()
    local used = aggwindow.used
    env:execute()
    eq(aggwindow.used - used, 0)
  end)
end)

spec.describe("aggwindow with a Lua trigger: checkpoints", function()
  local checkpoint = require("weir.checkpoint")
  local windowing = require("weir.windowing")
  local format = require("weir.format")
  -- One run of records through a tumbling window with trigger t (a TRIGGERS name) on the fast
  -- (or the general) operator: its fires; `at`: a checkpoint of the window before record at
  -- (bytes, as a state file holds them, and the watermark), `restore`: the job starts from one.
  local function run_ck(t, records, fast, at, restore)
    local sink, seen, snap = {}, 0, nil
    local watch = winjob.watch()
    local node_of = function() return watch.nodes[#watch.nodes].node end
    if restore then
      local instantiate = windowing.instantiate
      windowing.instantiate = function(job, node)
        instantiate(job, node)
        windowing.instantiate = instantiate
        windowing.checkpoint_parts(job, node).state.restore(
          assert(checkpoint.decode_state(restore.state, 1))[1].value)
        for _, inst in ipairs(node.instances) do
          inst.watermark = restore.watermark
        end
      end
    end
    local env = weir.env{ parallelism = 1 }
    local late = weir.output_tag("late")
    env:from_collection(records)
      :map(function(e)
        seen = seen + 1
        if seen == at then
          local part = windowing.checkpoint_parts(nil, node_of()).state
          snap = { state = checkpoint.encode_state(1, { { name = "w", key_group = 0,
                                                          value = part.snapshot(), raw = true } }),
                   watermark = node_of().instances[1].watermark, fired = #sink }
        end
        return e
      end)
      :assign_timestamps_and_watermarks(punctuated)
      :filter(function(e) return e.wm == nil end)
      :key_by(function(e) return e[1] end)
      :window(W.tumbling_event_time(10))
      :trigger(TRIGGERS[t]())
      :side_output_late_data(late)
      :aggregate(count_sum, function(key, ctx, sums, out)
        local ws, gs = ctx:window_state(), ctx:global_state()
        ws.n, gs.n = (ws.n or 0) + 1, (gs.n or 0) + 1
        sink[#sink + 1] = ("%s %s %s %d %d"):format(format.value(key), tostring(ctx:window()),
          tostring(sums[1]), ws.n, gs.n)
        out(1)
      end)
      :get_side_output(late):sink(function(e)
        sink[#sink + 1] = ("%s late %s"):format(format.value(e[1]), e[2])
      end)
    aggwindow.disabled = not fast
    local ok, err = pcall(env.execute, env)
    aggwindow.disabled = false
    watch.stop()
    if not ok then
      error(err, 0)
    end
    return sink, snap, node_of()
  end
  for _, t in ipairs({ "event_time in Lua", "FIRE early, FIRE_AND_PURGE, PURGE",
                       "deletes its timer", "state in clear (moves mid-cleanup)" }) do
    it(t .. ": a checkpoint of either operator restores on both", function()
      math.randomseed(#t * 31)
      for _ = 1, 12 do
        local records = random_records(math.random(20, 70))
        local want, _, node = run_ck(t, records, true)
        eq(want, (run_ck(t, records, false)))
        if not t:find("moves") then
          eq(node.window_op == aggwindow, true, "runs on the fast operator")
        end
        local at = math.random(2, #records)
        for _, from in ipairs({ true, false }) do
          local before, snap = run_ck(t, records, from, at)
          eq(before, want, "a checkpoint changes nothing")
          for _, to in ipairs({ true, false }) do
            local rest = {}
            for i = at, #records do
              rest[#rest + 1] = records[i]
            end
            local got = {}
            for i = 1, snap.fired do
              got[i] = want[i]
            end
            for _, l in ipairs((run_ck(t, rest, to, nil, snap))) do
              got[#got + 1] = l
            end
            eq(got, want, ("taken on the %s operator at %d, restored on the %s"):format(
              from and "fast" or "general", at, to and "fast" or "general"))
          end
        end
      end
    end)
  end
  it("a general checkpoint with trigger state moves the restored node to the general operator",
    function()
      math.randomseed(3)
      local records = random_records(60)
      local want = run_ck("count(3) (moves: state)", records, false)
      local _, snap = run_ck("count(3) (moves: state)", records, false, 40)
      local moves = aggwindow.moves
      local rest = {}
      for i = 40, #records do
        rest[#rest + 1] = records[i]
      end
      local got = {}
      for i = 1, snap.fired do
        got[i] = want[i]
      end
      local tail_fires, _, node = run_ck("count(3) (moves: state)", rest, true, nil, snap)
      for _, l in ipairs(tail_fires) do
        got[#got + 1] = l
      end
      eq(got, want)
      eq(aggwindow.moves > moves, true)
      eq(node.window_op == require("weir.windowop"), true)
    end)
end)

-- A watermark lowered while the job runs (weir.scaleout: a partition assigned with a lower
-- watermark lowers every subtask's, and tells the window nodes: node.watermark_lowered): a
-- window that fired and went is open again below the new watermark, on both operators. The fast
-- operator's cache of each key's last window (last_start, which keeps a taken window's start)
-- must not hand out the window id its fire freed.
spec.describe("aggwindow after its watermark is lowered", function()
  local function run_lowered(trigger, fast)
    local watch = winjob.watch()
    local records = { { "a", 1, 1 }, { "b", 2, 1 }, { "a", 3, 2 }, { wm = 20 }, { "c", 22, 1 },
      { wm = -math.huge, lower = 5 }, { "a", 4, 3 }, { "b", 5, 4 }, { "a", 14, 1 },
      { "c", 6, 5 }, { wm = 30 } }
    local got, lates = winjob.run(records, W.tumbling_event_time(10), function(w)
      return w:aggregate(count_sum, function(key, ctx, sums, out)
        out({ key, tostring(ctx:window()), sums[1] })
      end)
    end, {
      env = { parallelism = 1 }, fast = fast, trigger = trigger and trigger(),
      each = function(e)
        if e.lower then -- as scaleout's lower does it for each subtask of each node
          local node = watch.nodes[#watch.nodes].node
          for _, inst in ipairs(node.instances) do
            if inst.watermark > e.lower then
              inst.watermark = e.lower
              if node.watermark_lowered then
                node.watermark_lowered(inst)
              end
            end
          end
        end
      end,
    })
    watch.stop()
    return got, lates
  end
  for _, t in ipairs({ false, "event_time in Lua" }) do
    it((t and "a Lua trigger (" .. t .. ")" or "the built-in trigger")
        .. ": the fired windows open again, as on the general operator", function()
      local got, lates = run_lowered(t and TRIGGERS[t], true)
      local want, want_late = run_lowered(t and TRIGGERS[t], false)
      eq(got, want)
      eq(lates, want_late)
      eq(lates, {})
      -- [0, 10) of a and b fired twice: before the watermark went down, and after
      local n = 0
      for _, r in ipairs(got) do
        n = n + (r[2] == "[0, 10)" and r[1] ~= "c" and 1 or 0)
      end
      eq(n, 4)
    end)
  end
end)

spec.finish()
