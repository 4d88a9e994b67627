-- Specs for window state in checkpoints (weir.winckpt through weir.windowing.checkpoint_parts).
-- Random jobs on both window operators (tumbling, tumbling with allowed lateness, sliced
-- sliding, sessions, count windows, a Lua trigger with numeric and Lua trigger state and
-- equal-time timers, an evictor, processing-time windows on the replay clock) are snapshotted
-- between two records, the sections encoded and decoded as a state file holds them, and
-- restored into a fresh job that reads the rest of the records, at the same parallelism (2) and
-- at 1, 3 and 4: the fires before the snapshot plus the fresh job's are the uninterrupted
-- run's (per key in the same order). Equal-time timers fire in registration order across a
-- restore (issue 14, 7(f)).
local spec = require("spec")
local weir = require("weir")
local checkpoint = require("weir.checkpoint")
local windowing = require("weir.windowing")
local aggwindow = require("weir.aggwindow")
local format = require("weir.format")
local winjob = require("lib.winjob")
local it, eq = spec.it, spec.eq
local W = weir.windows

local counted = {
  create = function() return 0 end,
  add = function(e, acc) return acc + 1000 + e[3] end,
  result = function(acc) return acc end,
  merge = function(a, b) return a + b end,
}

-- A Lua trigger with trigger state: a count in a numeric cell, the last value seen in Lua
-- state (a table), every 3rd element a fire, and at the window's end two timers at the same
-- time (its max timestamp) registered in a key-dependent order with a third one before it.
local function lua_trigger()
  return weir.trigger{
    name = "every third",
    on_element = function(_, e, _, window, ctx)
      local n = ctx:state("n")
      local c = (n:get() or 0) + 1
      n:set(c)
      ctx:state("last"):set({ v = e[3], k = tostring(e[1]) })
      local m = window:max_timestamp()
      if m <= ctx:current_watermark() then
        return weir.FIRE
      end
      ctx:register_event_time_timer(m)
      ctx:register_event_time_timer(m - 1)
      if c % 3 == 0 then
        return weir.FIRE
      end
      return weir.CONTINUE
    end,
    on_event_time = function(_, time, window, ctx)
      local last = ctx:state("last"):get()
      if time == window:max_timestamp() and last then
        return weir.FIRE
      end
      return weir.CONTINUE
    end,
    clear = function(_, window, ctx)
      ctx:state("n"):clear()
      ctx:state("last"):clear()
      ctx:delete_event_time_timer(window:max_timestamp())
      ctx:delete_event_time_timer(window:max_timestamp() - 1)
    end,
  }
end

local CASES = {
  { name = "tumbling (fast)", fast = "tumbling", fn = "aggregate",
    assigner = function() return W.tumbling_event_time(10) end },
  { name = "tumbling with allowed lateness (fast)", fast = "tumbling", fn = "aggregate",
    lateness = 15, assigner = function() return W.tumbling_event_time(10, 3) end },
  { name = "sliced sliding with lateness (fast)", fast = "sliced", fn = "aggregate",
    lateness = 12, assigner = function() return W.sliding_event_time(30, 10) end },
  { name = "tumbling, built-in sum in C (fast)", fast = "tumbling", fn = "builtin", agg = "sum",
    assigner = function() return W.tumbling_event_time(10) end },
  { name = "tumbling with allowed lateness, built-in avg in C (fast)", fast = "tumbling",
    fn = "builtin", agg = "avg", lateness = 15,
    assigner = function() return W.tumbling_event_time(10, 3) end },
  { name = "sliced sliding, no lateness: slices dropped by the fires (fast)", fast = "sliced",
    fn = "aggregate", assigner = function() return W.sliding_event_time(40, 10) end },
  { name = "sliced sliding with lateness, built-in sum in C batches (fast)", fast = "sliced",
    fn = "builtin", agg = "sum", lateness = 12,
    assigner = function() return W.sliding_event_time(30, 10) end },
  { name = "sliced sliding, built-in max in C batches: slices dropped by the fires (fast)",
    fast = "sliced", fn = "builtin", agg = "max",
    assigner = function() return W.sliding_event_time(40, 10) end },
  { name = "sliding reduce of records: on the general operator from its first element",
    fn = "reduce", lateness = 6, assigner = function() return W.sliding_event_time(30, 10) end },
  { name = "tumbling on the general operator", fn = "aggregate", general = true,
    assigner = function() return W.tumbling_event_time(10) end },
  { name = "sessions (merging)", fn = "process", lateness = 5,
    assigner = function() return W.event_time_session(8) end },
  { name = "count windows (global, purging count trigger)", fn = "process",
    assigner = function() return W.global() end,
    trigger = function() return weir.triggers.purging(weir.triggers.count(3)) end },
  { name = "a Lua trigger with state and equal-time timers", fn = "process", lateness = 4,
    assigner = function() return W.sliding_event_time(20, 10) end, trigger = lua_trigger },
  -- Flink's EventTimeTrigger in Lua, on the fast operator's state (weir.aggwindow), whose
  -- checkpoints are the general operator's sections
  { name = "tumbling, a Lua trigger (fast)", fast = "tumbling", fn = "aggregate",
    assigner = function() return W.tumbling_event_time(10) end,
    trigger = function()
      return weir.trigger{
        on_element = function(_, e, _, w, ctx)
          ctx:register_event_time_timer(w:max_timestamp())
          return e[3] == 9 and weir.FIRE or weir.CONTINUE
        end,
        on_event_time = function(_, t, w)
          return t == w:max_timestamp() and weir.FIRE or weir.CONTINUE
        end,
        clear = function(_, w, ctx) ctx:delete_event_time_timer(w:max_timestamp()) end,
      }
    end },
  { name = "an evictor", fn = "process",
    assigner = function() return W.sliding_event_time(20, 10) end,
    evictor = function() return weir.evictors.count(2) end },
}

local function emit_fire(sink)
  return function(key, ctx, elements, out)
    local vals = {}
    for i, e in ipairs(elements) do
      vals[i] = type(e) == "table" and (e[2] .. ":" .. e[3]) or tostring(e)
    end
    local line = ("%s %s %s"):format(format.value(key), tostring(ctx:window()),
      table.concat(vals, " "))
    sink[#sink + 1] = line
    out(line)
  end
end

-- One run of case over records at window parallelism p; `at`: snapshot the window node
-- before record at (returns the decoded sections and the watermark), `restore`: before the
-- start, the window node gets these sections and watermark.
local function run(case, records, p, at, restore)
  local sink = {}
  local env = weir.env()
  local seen, snap = 0, nil
  local watch = winjob.watch()
  local node_of = function() return watch.nodes[#watch.nodes].node end
  if restore then
    local instantiate = windowing.instantiate
    windowing.instantiate = function(job, node)
      instantiate(job, node)
      windowing.instantiate = instantiate
      local part = windowing.checkpoint_parts(job, node).state
      -- decoded for each restore: a restore adopts the decoded tables as the state
      part.restore(restore.state and assert(checkpoint.decode_state(restore.state, 1))[1].value
        or restore.groups)
      for _, inst in ipairs(node.instances) do
        inst.watermark = restore.watermark
      end
    end
  end
  local w = env:from_collection(records)
    :map(function(e)
      seen = seen + 1
      if seen == at then
        local node = node_of()
        local part = windowing.checkpoint_parts(nil, node).state
        local bytes = checkpoint.encode_state(1, { { name = "w", key_group = 0,
                                                     value = part.snapshot(), raw = part.raw } })
        snap = { state = bytes, watermark = node.instances[1].watermark, fired = #sink,
                 bytes = #bytes }
      end
      return e
    end)
    :assign_timestamps_and_watermarks(winjob.punctuated)
    :filter(function(e) return e.wm == nil end)
    :key_by(function(e) return e[1] end)
    :window(case.assigner())
  if case.trigger then
    w = w:trigger(case.trigger())
  end
  if case.lateness then
    w = w:allowed_lateness(case.lateness)
  end
  if case.evictor then
    w = w:evictor(case.evictor())
  end
  local late = weir.output_tag("late")
  w = w:side_output_late_data(late)
  local r
  if case.fn == "aggregate" then
    r = w:aggregate(counted, emit_fire(sink))
  elseif case.fn == "builtin" then -- weir.aggregates: accumulators in C (aggs.c)
    r = w:aggregate(weir.aggregates[case.agg](3), emit_fire(sink))
  elseif case.fn == "reduce" then
    r = w:reduce(function(a, b) return b[3] > a[3] and b or a end, emit_fire(sink))
  else
    r = w:process(emit_fire(sink))
  end
  r:set_parallelism(p):sink(function() end)
  r:get_side_output(late):sink(function(e) -- late records: the same before and after, too
    sink[#sink + 1] = ("%s late %s:%s"):format(format.value(e[1]), e[2], e[3])
  end)
  aggwindow.disabled = case.general == true
  local ok, err = pcall(env.execute, env)
  aggwindow.disabled = false
  watch.stop()
  if not ok then
    error(err, 0)
  end
  local node = node_of()
  if case.fast and not case.general then
    eq(node.window_op == aggwindow, true, case.name .. " runs on the fast operator")
  end
  if case.fn == "builtin" then
    local inst = node.instances[1]
    eq(inst.cagg ~= false or inst.sl_batch ~= false, true,
      case.name .. " keeps its accumulators in C")
  end
  return sink, snap
end

-- Per key, the sequence of its fires (keys are the first word of a line).
local function per_key(lines)
  local out = {}
  for _, l in ipairs(lines) do
    local k = l:match("^(%S+)")
    out[k] = out[k] or {}
    table.insert(out[k], l)
  end
  return out
end

local function sorted(lines)
  local c = {}
  for i, l in ipairs(lines) do
    c[i] = l
  end
  table.sort(c)
  return c
end

local function tail(records, from)
  local out = {}
  for i = from, #records do
    out[#out + 1] = records[i]
  end
  return out
end

for _, case in ipairs(CASES) do
  it(case.name .. ": snapshot mid-run, restore at parallelism 2, 1, 3 and 4", function()
    math.randomseed(#case.name * 7919)
    for _ = 1, 4 do
      local records = winjob.random_records(120)
      local want = run(case, records, 2)
      local at = math.random(10, #records - 10)
      local before, snap = run(case, records, 2, at)
      eq(before, want, "a snapshot changes nothing")
      for _, p in ipairs({ 2, 1, 3, 4 }) do
        local got = {}
        for i = 1, snap.fired do
          got[i] = want[i]
        end
        local rest = run(case, tail(records, at), p, nil, snap)
        for _, l in ipairs(rest) do
          got[#got + 1] = l
        end
        eq(sorted(got), sorted(want), ("%s at %d, restored at parallelism %d"):format(case.name,
          at, p))
        eq(per_key(got), per_key(want), "per key in the same order")
      end
    end
  end)
end

it("the restore is needed: without the snapshot's state the rest differs", function()
  math.randomseed(5)
  local case = CASES[2]
  local records = winjob.random_records(120)
  local want = run(case, records, 2)
  local _, snap = run(case, records, 2, 60)
  local empty = { groups = {}, watermark = snap.watermark }
  local rest = run(case, tail(records, 60), 2, nil, empty)
  local got = {}
  for i = 1, snap.fired do
    got[i] = want[i]
  end
  for _, l in ipairs(rest) do
    got[#got + 1] = l
  end
  local a, b = sorted(got), sorted(want)
  local same = #a == #b
  for i = 1, #a do
    same = same and a[i] == b[i]
  end
  eq(same, false, "a fresh job without the windows' state fires otherwise")
end)

-- 7(f): a Lua trigger registers, per element, two event-time timers at the same time (the
-- window's end) for many keys in an order that is neither the keys' nor their groups'; the
-- fires (in order, at parallelism 1, one subtask) are the same with a restore between.
it("equal-time timers fire in registration order across a restore", function()
  local general = { name = "equal times", fn = "process", trigger = lua_trigger,
                    assigner = function() return W.tumbling_event_time(100) end }
  -- the fast operator: a window's two timers (its end, its cleanup) in per-time FIFOs
  local fast = { name = "equal times (fast)", fn = "aggregate", lateness = 30, fast = "tumbling",
                 assigner = function() return W.tumbling_event_time(100) end }
  local keys = { "m", "c", "x", "a", 17, "q", 3, "b", "z", 40, "e", "k" }
  local records = {}
  for round = 0, 3 do
    for i = 1, #keys do
      records[#records + 1] = { keys[(i * 5 + round) % #keys + 1], round * 100 + i, i }
    end
    records[#records + 1] = { wm = round * 100 + 50 }
    for i = #keys, 1, -1 do
      records[#records + 1] = { keys[i], round * 100 + 60 + i, i }
    end
    records[#records + 1] = { wm = round * 100 + 99 }
  end
  for _, case in ipairs({ general, fast }) do
    local want = run(case, records, 1)
    for _, at in ipairs({ 14, 27, 40, 66 }) do
      local _, snap = run(case, records, 1, at)
      local got = {}
      for i = 1, snap.fired do
        got[i] = want[i]
      end
      for _, l in ipairs(run(case, tail(records, at), 1, nil, snap)) do
        got[#got + 1] = l
      end
      eq(got, want, ("%s: the same fires in the same order, restored before record %d")
        :format(case.name, at))
    end
  end
end)

-- Processing-time windows on the replay's virtual clock: the snapshot is taken at a line, the
-- fresh job replays the rest from that line's time.
it("processing-time windows: their timers and contents survive a restore", function()
  local lines = {}
  math.randomseed(11)
  local t = 1000
  for _ = 1, 80 do
    t = t + math.random(0, 400)
    lines[#lines + 1] = { t, ("k%d,%d"):format(math.random(1, 5), math.random(1, 9)) }
  end
  local function file(from)
    local p = os.tmpname()
    local fh = assert(io.open(p, "w"))
    for i = from, #lines do
      fh:write(("@%d %s\n"):format(lines[i][1], lines[i][2]))
    end
    fh:close()
    return p
  end
  local function prun(path, at, restore)
    local sink, seen, snap = {}, 0, nil
    local env = weir.env()
    local watch = winjob.watch()
    if restore then
      local instantiate = windowing.instantiate
      windowing.instantiate = function(job, node)
        instantiate(job, node)
        windowing.instantiate = instantiate
        windowing.checkpoint_parts(job, node).state.restore(
          assert(checkpoint.decode_state(restore.state, 1))[1].value)
      end
    end
    env:replay(path)
      :map(function(l)
        seen = seen + 1
        if seen == at then
          local node = watch.nodes[#watch.nodes].node
          local part = windowing.checkpoint_parts(nil, node).state
          local bytes = checkpoint.encode_state(1, { { name = "w", key_group = 0,
                                                       value = part.snapshot(), raw = part.raw } })
          snap = { state = bytes, fired = #sink }
        end
        local k, v = l:match("^(%w+),(%d+)$")
        return { k, 0, tonumber(v) }
      end)
      :key_by(function(e) return e[1] end)
      :window(W.sliding_processing_time(1000, 500))
      :process(emit_fire(sink)):set_parallelism(2):sink(function() end)
    env:execute()
    watch.stop()
    return sink, snap
  end
  local whole = file(1)
  local want = prun(whole)
  for _, at in ipairs({ 20, 41, 63 }) do
    local _, snap = prun(whole, at)
    local rest_path = file(at)
    local got = {}
    for i = 1, snap.fired do
      got[i] = want[i]
    end
    for _, l in ipairs(prun(rest_path, nil, snap)) do
      got[#got + 1] = l
    end
    os.remove(rest_path)
    eq(sorted(got), sorted(want), "restored before line " .. at)
    eq(per_key(got), per_key(want), "per key in the same order")
  end
  os.remove(whole)
end)

-- About 40 bytes per open numeric-aggregate tumbling window on disk (issue 14's target: 64).
it("an open numeric-aggregate window costs at most 64 bytes on disk", function()
  local records = {}
  for k = 1, 20000 do
    records[#records + 1] = { k * 7 + 100000, 5, 1 }
  end
  local case = CASES[1]
  records[#records + 1] = { 1, 6, 1 }
  local _, snap = run(case, records, 1, #records)
  local per = snap.bytes / 20000
  io.stderr:write(("  %.1f bytes per open window\n"):format(per))
  eq(per <= 64, true, ("%.1f bytes per window"):format(per))
end)

-- Lateness after a rescale (docs/API.md, Checkpoints): old subtask 0 had watermark 30, old
-- subtask 1 watermark 10 (weir's subtasks see the same watermarks, so the savepoint is made
-- here: the operator part restores them). Restored at parallelism 1, 3 and 4, a subtask's
-- watermark is the minimum it inherits, but a record of a key group old subtask 0 owned is late
-- against 30, as it was there: its windows, fired and purged there, are not made again; with
-- allowed lateness a window due at 30 fires with each element, as it did there. Once the
-- watermark passes 30 the floors go. Both operators, every late path (the side output, the
-- count, allowed lateness).
local checkpoint_parts = require("weir.checkpoint_parts")
local keys_mod = require("weir.keys")

local function floor_run(case, records, p, old_wms, count_late)
  local sink = {}
  local env = weir.env()
  local watch = winjob.watch()
  local instantiate = windowing.instantiate
  windowing.instantiate = function(job, node)
    instantiate(job, node)
    windowing.instantiate = instantiate
    checkpoint_parts.operator_part({}, node).restore({ parallelism = #old_wms,
      channels = node.channels, ports = {}, subtasks = old_wms })
  end
  local w = env:from_collection(records)
    :assign_timestamps_and_watermarks(winjob.punctuated)
    :filter(function(e) return e.wm == nil end)
    :key_by(function(e) return e[1] end)
    :window(case.assigner())
  if case.lateness then
    w = w:allowed_lateness(case.lateness)
  end
  local late = weir.output_tag("late")
  if not count_late then
    w = w:side_output_late_data(late)
  end
  local r = case.fn == "aggregate" and w:aggregate(counted, emit_fire(sink))
    or case.fn == "builtin" and w:aggregate(weir.aggregates[case.agg](3), emit_fire(sink))
    or w:process(emit_fire(sink))
  r:set_parallelism(p):sink(function() end)
  if not count_late then
    r:get_side_output(late):sink(function(e)
      sink[#sink + 1] = ("%s late %s:%s"):format(format.value(e[1]), e[2], e[3])
    end)
  end
  aggwindow.disabled = case.general == true
  local ok, err = pcall(env.execute, env)
  aggwindow.disabled = false
  local node = watch.nodes[#watch.nodes].node
  watch.stop()
  if not ok then
    error(err, 0)
  end
  if case.fast and not case.general then
    eq(node.window_op == aggwindow, true, case.name .. " runs on the fast operator")
  end
  if case.fn == "builtin" then
    local inst = node.instances[1]
    eq(inst.cagg ~= false or inst.sl_batch ~= false, true,
      case.name .. " keeps its accumulators in C")
  end
  local floors = false
  for _, inst in ipairs(node.instances) do
    floors = floors or inst.floors ~= false
  end
  eq(floors, false, "the floors are gone once the watermark passed them")
  return sorted(sink), node.late_dropped
end

it("after a rescale a key group's records are late against its old subtask's watermark", function()
  -- a key of each old subtask (parallelism 2, max parallelism 128)
  -- a key of each old subtask (parallelism 2, max parallelism 128) whose groups both go to
  -- subtask 2/3 at parallelism 3 (at 4 each new subtask has the groups of one old subtask)
  local old = {}
  for i = 1, 1000 do
    local k = "k" .. i
    if keys_mod.subtask(k, 128, 3) == 1 then
      old[keys_mod.subtask(k, 128, 2)] = old[keys_mod.subtask(k, 128, 2)] or k
    end
  end
  local a, b = old[0], old[1] -- a: old subtask 0 (watermark 30), b: old subtask 1 (10)
  local records = { { a, 15, 1 }, { b, 15, 2 }, { a, 25, 3 }, { a, 26, 4 }, { b, 26, 5 },
                    { wm = 40 }, { a, 15, 6 }, { b, 15, 7 }, { a, 45, 8 }, { wm = 60 } }
  local cases = {
    { name = "tumbling (fast)", fast = "tumbling", fn = "aggregate",
      assigner = function() return W.tumbling_event_time(10) end },
    { name = "tumbling, lateness 5 (fast)", fast = "tumbling", fn = "aggregate", lateness = 5,
      assigner = function() return W.tumbling_event_time(10) end },
    { name = "tumbling (general)", fn = "aggregate", general = true, lateness = 5,
      assigner = function() return W.tumbling_event_time(10) end },
    { name = "sliced sliding (fast)", fast = "sliced", fn = "aggregate", lateness = 5,
      assigner = function() return W.sliding_event_time(20, 10) end },
    { name = "sliced sliding, no lateness (fast)", fast = "sliced", fn = "aggregate",
      assigner = function() return W.sliding_event_time(20, 10) end },
    { name = "sliced sliding, built-in sum in C batches (fast)", fast = "sliced", fn = "builtin",
      agg = "sum", lateness = 5, assigner = function() return W.sliding_event_time(20, 10) end },
    { name = "sliding, process (general)", fn = "process",
      assigner = function() return W.sliding_event_time(20, 10) end },
    { name = "sessions (general, merging)", fn = "process", lateness = 5,
      assigner = function() return W.event_time_session(3) end },
  }
  for _, case in ipairs(cases) do
    -- what the old subtasks did: a's records at watermark 30, b's at 10 (each key alone on a
    -- subtask with that watermark)
    local function alone(k, wm, count_late)
      local recs = {}
      for _, e in ipairs(records) do
        if e.wm or e[1] == k then
          recs[#recs + 1] = e
        end
      end
      return floor_run(case, recs, 1, { { watermark = wm } }, count_late)
    end
    local want = {}
    for _, l in ipairs(alone(a, 30)) do want[#want + 1] = l end
    for _, l in ipairs(alone(b, 10)) do want[#want + 1] = l end
    want = sorted(want)
    for _, p in ipairs({ 1, 3, 4 }) do
      local got = floor_run(case, records, p, { { watermark = 30 }, { watermark = 10 } })
      eq(got, want, ("%s restored at parallelism %d"):format(case.name, p))
    end
    -- the same parallelism: each subtask its own watermark, no floors (none are needed)
    eq(floor_run(case, records, 2, { { watermark = 30 }, { watermark = 10 } }), want,
      case.name .. " restored at parallelism 2")
    -- late records counted (no side output): the count is the old subtasks' together
    local _, n = floor_run(case, records, 3, { { watermark = 30 }, { watermark = 10 } }, true)
    local _, na = alone(a, 30, true)
    local _, nb = alone(b, 10, true)
    eq(n > 0, true, case.name .. ": some records are late")
    eq(n, na + nb, case.name .. ": late records counted as the old subtasks did")
  end
  -- the floors matter: with both old watermarks at the minimum, a's records are accepted
  local case = cases[1]
  local without = floor_run(case, records, 1, { { watermark = 10 }, { watermark = 10 } })
  local with = floor_run(case, records, 1, { { watermark = 30 }, { watermark = 10 } })
  eq(table.concat(without, "\n") ~= table.concat(with, "\n"), true, "the floors change the result")
end)

spec.finish()
