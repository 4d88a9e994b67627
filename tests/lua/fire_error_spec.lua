-- Specs for a window fire that fails the job (no on_error) on the fast operator: the state
-- it leaves (what the REPL and env:status() show of a failed job) must be the general
-- operator's: the failing window still there without its timer, the windows its chunk of
-- fires had not reached yet there with theirs, every other window and timer as it was.
local spec = require("spec")
local weir = require("weir")
local windowing = require("weir.windowing")
local format = require("weir.format")
local winjob = require("lib.winjob")
local it, eq = spec.it, spec.eq
local W = weir.windows

-- Aggregates on the fast operator: a Lua one and weir.aggregates' (computed in C).
local AGGS = {
  lua = function() return winjob.count_sum end,
  count = function() return weir.aggregates.count() end,
  sum = function() return weir.aggregates.sum(3) end,
  avg = function() return weir.aggregates.avg(3) end,
  max = function() return weir.aggregates.max(3) end,
}

-- The state of the job's window subtask, as plain comparable values.
local function state_of(node)
  local st = windowing.state(node, node.instances[1])
  local ws, ts = {}, {}
  for _, w in ipairs(st.windows) do
    local c = w.contents
    if type(c) == "table" then
      c = format.value(c)
    end
    ws[#ws + 1] = ("%s %s %s n=%d %s"):format(format.value(w.key), tostring(w.window),
      tostring(c), w.count, w.waits.what .. " " .. tostring(w.waits.time))
  end
  for _, t in ipairs(st.timers) do
    ts[#ts + 1] = ("%s %s %s"):format(format.value(t.key), t.time, tostring(t.window))
  end
  table.sort(ts) -- the order at one time is the registration's, which the two keep alike
  return { windows = ws, timers = ts }
end

-- Runs records through tumbling 10 ms windows with aggregate agg and a window function that
-- fails at its bad-th call; `sync`: a map lists the state now and then (a built-in
-- aggregate's windows then have their timers in the Lua queue, not in C). Returns the
-- error, the fires before it and the state at the end.
local function run(records, agg, bad, fast, sync, lateness, assigner)
  local watch = winjob.watch()
  local calls, fires = 0, {}
  local node
  local ok, err = pcall(winjob.run, records, assigner or W.tumbling_event_time(10), function(w)
    return w:aggregate(AGGS[agg](), function(key, ctx, r, out)
      calls = calls + 1
      if calls == bad then
        error("bad window " .. tostring(ctx:window()), 0)
      end
      fires[#fires + 1] = ("%s %s %s"):format(format.value(key), tostring(ctx:window()),
        tostring(r[1]))
      out(1)
    end)
  end, { fast = fast, lateness = lateness, each = sync and function()
    if math.random() < 0.3 and watch.nodes[1] then
      windowing.state(watch.nodes[1].node, watch.nodes[1].node.instances[1])
    end
  end })
  watch.stop()
  node = watch.nodes[1].node
  return ok, err, fires, state_of(node), node
end

local function records_of(n)
  -- keys "a".."f" and 0..3, values 1-9; watermarks now and then
  return winjob.random_records(n, { "a", "b", "c", "d", "e", "f", 0, 1, 2, 3 })
end

for _, agg in ipairs({ "lua", "count", "sum", "avg", "max" }) do
  for _, sync in ipairs({ false, true }) do
    for _, lateness in ipairs({ 0, 6 }) do
      local name = ("%s aggregate%s%s: a failed fire leaves the general operator's state"):format(
        agg, sync and ", timers listed into the Lua queue" or "",
        lateness > 0 and ", allowed lateness" or "")
      it(name, function()
        math.randomseed(#name * 7 + lateness)
        local failures = 0
        for round = 1, 25 do
          local records = records_of(math.random(30, 90))
          local seed = math.random(1, 1e6)
          -- how many fires the job has, then a failure at one of them
          math.randomseed(seed)
          local _, _, all = run(records, agg, -1, false, sync, lateness)
          if #all > 0 then
            local bad = math.random(1, #all)
            math.randomseed(seed)
            local ok_f, err_f, fires_f, st_f, node = run(records, agg, bad, true, sync, lateness)
            math.randomseed(seed)
            local ok_g, err_g, fires_g, st_g = run(records, agg, bad, false, sync, lateness)
            eq(ok_f, false, "the job fails")
            eq(ok_g, false)
            eq(node.window_op == require("weir.aggwindow"), true, "runs on the fast operator")
            local say = "bad window [^\n]*"
            eq(tostring(err_f):match(say), tostring(err_g):match(say))
            eq(fires_f, fires_g, "round " .. round)
            eq(st_f, st_g, "round " .. round .. ": the state at the end")
            failures = failures + 1
          end
        end
        eq(failures > 10, true, "most rounds fail a fire")
      end)
    end
  end
end

-- records_of without late records: a late record's fire runs in its push, where the sliced
-- operator (its element already in the slice every window of it shares) cannot fail as the
-- general one does, window by window
local function in_time(n)
  local out, wm = {}, -math.huge
  for _, e in ipairs(records_of(n)) do
    if e.wm then
      wm = math.max(wm, e.wm)
      out[#out + 1] = e
    elseif e[2] > wm then
      out[#out + 1] = e
    end
  end
  return out
end

-- Sliding windows run as slices (the fast operator): a failed fire's time keeps the windows
-- its fires had not reached (without allowed lateness, with the first slices the fire pass
-- dropped in C for the whole chunk, before the window functions ran).
for _, agg in ipairs({ "lua", "count", "max" }) do
  for _, lateness in ipairs({ 0, 6 }) do
    local name = ("sliding 30/10, %s aggregate%s: a failed fire leaves the general operator's "
      .. "state"):format(agg, lateness > 0 and ", allowed lateness" or "")
    it(name, function()
      math.randomseed(#name * 11 + lateness)
      local failures = 0
      for round = 1, 25 do
        local records = in_time(math.random(30, 90))
        local assigner = function() return W.sliding_event_time(30, 10) end
        local _, _, all = run(records, agg, -1, false, false, lateness, assigner())
        if #all > 0 then
          local bad = math.random(1, #all)
          local _, _, fires_f, st_f = run(records, agg, bad, true, false, lateness, assigner())
          local _, _, fires_g, st_g = run(records, agg, bad, false, false, lateness, assigner())
          eq(fires_f, fires_g, "round " .. round)
          eq(st_f, st_g, "round " .. round .. ": the state at the end")
          failures = failures + 1
        end
      end
      eq(failures > 10, true, "most rounds fail a fire")
    end)
  end
end

spec.finish()
