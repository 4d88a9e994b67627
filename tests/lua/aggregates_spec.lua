-- Specs for weir.aggregates, the built-in window aggregates (computed in C on the fast
-- operator's tumbling windows, runtime/aggs.c, and their sliced merges in C,
-- weir_slices_run_ops; in Lua everywhere else): on random inputs (out of order, late, within
-- allowed lateness) each of count, sum, min, max, avg gives what the same aggregate written in
-- Lua gives, on every assigner (tumbling, with offset and allowed lateness, sliding with and
-- without lateness, sessions, global with a count trigger) and on both operators; the record
-- a window emits without a window function; bad values fail naming the field and the record,
-- or go to on_error; empty and late-only inputs fire nothing.
local spec = require("spec")
local weir = require("weir")
local aggwindow = require("weir.aggwindow")
local windowing = require("weir.windowing")
local winjob = require("lib.winjob")
local it, eq, raises = spec.it, spec.eq, spec.raises
local W, A = weir.windows, weir.aggregates

-- The same aggregates written in Lua, on field 3 (the value) of {key, ts, value} records.
local LUA = {
  count = { create = function() return 0 end, add = function(_, c) return c + 1 end,
            result = function(c) return c end, merge = function(a, b) return a + b end },
  sum = { create = function() return 0 end, add = function(e, s) return s + e[3] end,
          result = function(s) return s end, merge = function(a, b) return a + b end },
  min = { create = function() return math.huge end,
          add = function(e, m) return math.min(m, e[3]) end,
          result = function(m) return m end, merge = function(a, b) return math.min(a, b) end },
  max = { create = function() return -math.huge end,
          add = function(e, m) return math.max(m, e[3]) end,
          result = function(m) return m end, merge = function(a, b) return math.max(a, b) end },
  avg = { create = function() return { 0, 0 } end,
          add = function(e, a) return { a[1] + e[3], a[2] + 1 } end,
          result = function(a) return a[1] / a[2] end,
          merge = function(a, b) return { a[1] + b[1], a[2] + b[2] } end },
}
local KINDS = { "count", "sum", "min", "max", "avg" }

local function builtin(kind)
  if kind == "count" then
    return A.count()
  end
  return A[kind](3)
end

local ASSIGNERS = {
  { name = "tumbling", make = function() return W.tumbling_event_time(10) end, lateness = 0,
    fast = true },
  { name = "tumbling with offset and lateness", lateness = 12, fast = true,
    make = function() return W.tumbling_event_time(10, 3) end },
  { name = "sliding", make = function() return W.sliding_event_time(30, 10) end, lateness = 4,
    sliced = true },
  { name = "sliding without lateness", make = function() return W.sliding_event_time(40, 10) end,
    lateness = 0, sliced = true },
  { name = "sessions", make = function() return W.event_time_session(6) end, lateness = 3 },
  { name = "global with a count trigger", make = function() return W.global() end,
    trigger = function() return weir.triggers.count(3) end },
}

-- A window's fire as a plain list: key, window, result (what a window function sees).
local function shown(key, ctx, results, out)
  local w = ctx:window()
  out({ key, w.start, w.stop, results[1] })
end

-- Fractional values too, so that sums and means are compared to the last bit.
local function records_of(n)
  local recs = winjob.random_records(n)
  for _, r in ipairs(recs) do
    if r[3] then
      r[3] = r[3] + math.random(0, 7) / 8 - (math.random() < 0.3 and 10 or 0)
    end
  end
  return recs
end

-- The fires of agg on case over records: with a window function (fn) or without one (the
-- window's record, as a list key, start, stop, value, and its Lua type).
local function run(case, records, agg, fn, fast)
  local got, lates = winjob.run(records, case.make(), function(w)
    if fn then
      return w:aggregate(agg, fn)
    end
    return w:aggregate(agg)
  end, { env = { parallelism = 1 }, lateness = case.lateness,
         trigger = case.trigger and case.trigger(), fast = fast })
  if not fn then
    for i, r in ipairs(got) do
      got[i] = { r.key, r.start, r.stop, r.value, type(r) }
    end
  end
  return got, lates
end

spec.describe("weir.aggregates equal the same aggregates in Lua", function()
  for _, case in ipairs(ASSIGNERS) do
    for _, kind in ipairs(KINDS) do
      it(("%s, %s: 40 random inputs"):format(case.name, kind), function()
        math.randomseed(11)
        local fired = 0
        for round = 1, 40 do
          local records = records_of(math.random(1, 60))
          local used = aggwindow.used
          local got, late = run(case, records, builtin(kind), shown, true)
          -- sliced sliding windows run count, sum, min, max (number accumulators with merge)
          local fast = case.fast or (case.sliced and kind ~= "avg")
          eq(aggwindow.used - used, fast and 1 or 0, "the fast operator runs it")
          local want, want_late = run(case, records, LUA[kind], shown, true)
          local ok, err = pcall(eq, got, want)
          if not ok then
            error(("round %d: fires differ: %s"):format(round, err), 0)
          end
          eq(late, want_late)
          if fast then -- the general operator: the same again
            local slow, slow_late = run(case, records, builtin(kind), shown, false)
            eq(slow, got)
            eq(slow_late, late)
          end
          fired = fired + #got
        end
        assert(fired > 40, "windows fired")
      end)
    end
  end
end)

spec.describe("a built-in aggregate without a window function", function()
  it("emits window_result{key, start, stop, value} for number keys, a table otherwise",
    function()
      math.randomseed(3)
      for _, case in ipairs(ASSIGNERS) do
        for _, kind in ipairs({ "count", "avg" }) do
          local records = records_of(50)
          local got = run(case, records, builtin(kind), nil, true)
          local want = run(case, records, LUA[kind], shown, true)
          eq(#got, #want)
          for i, r in ipairs(got) do
            eq({ r[1], r[2], r[3], r[4] }, want[i], case.name .. " " .. kind)
            eq(r[5], type(r[1]) == "number" and "cdata" or "table")
          end
          if case.fast then
            eq(run(case, records, builtin(kind), nil, false), got)
          end
        end
      end
    end)

  it("prints as a record, and its type is weir.aggregates.window_result", function()
    local env = weir.env{ parallelism = 1 }
    local out = env:from_collection({ { 1, 5, 2 }, { 1, 7, 4 }, { "k", 8, 1 } })
      :assign_timestamps_and_watermarks(winjob.punctuated)
      :key_by(function(e) return e[1] end)
      :window(W.tumbling_event_time(10))
      :aggregate(A.avg(3))
      :collect()
    env:execute()
    local v = out:values()
    eq(#v, 2)
    eq(tostring(v[1]), "window_result{key=1, start=0, stop=10, value=3}")
    assert(require("ffi").istype(A.window_result, v[1]))
    eq({ v[2].key, v[2].start, v[2].stop, v[2].value }, { "k", 0, 10, 1 })
  end)

  it("window_all: the record has no key", function()
    local env = weir.env{ parallelism = 1 }
    local out = env:from_collection({ { 1, 5, 2 }, { 2, 7, 4 } })
      :assign_timestamps_and_watermarks(winjob.punctuated)
      :window_all(W.tumbling_event_time(10))
      :aggregate(A.sum(3))
      :collect()
    env:execute()
    local v = out:values()
    eq(#v, 1)
    eq({ v[1].key, v[1].start, v[1].stop, v[1].value }, { nil, 0, 10, 6 })
  end)
end)

spec.describe("built-in aggregates read fields", function()
  local function one_window(records, agg)
    local env = weir.env{ parallelism = 1 }
    local out = env:from_collection(records)
      :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
        :with_timestamp_assigner(function() return 1 end))
      :key_by(function() return 0 end)
      :window(W.tumbling_event_time(10))
      :aggregate(agg)
      :map(function(r) return r.value end)
      :collect()
    env:execute()
    return out:values()
  end

  it("by position, by name, of a typed record, and a number record as field 1", function()
    eq(one_window({ { 1, 2 }, { 3, 4 } }, A.sum(2)), { 6 })
    eq(one_window({ { x = 1 }, { x = 5 } }, A.max("x")), { 5 })
    local ev = weir.record_type("aggspec_ev", { "int32_t k", "double price" })
    eq(one_window({ ev(1, 2.5), ev(2, 0.5) }, A.min("price")), { 0.5 })
    eq(one_window({ 4, 8 }, A.avg(1)), { 6 })
    eq(one_window({ "a", "b", "c" }, A.count()), { 3 })
  end)

  it("refuses a bad field or an argument count() does not take, at build time", function()
    raises(function() A.sum(0) end, "weir.aggregates.sum(0): expected a field")
    raises(function() A.min("") end, "expected a field")
    raises(function() A.avg() end, "weir.aggregates.avg(nil): expected one field")
    raises(function() A.count(1) end, "weir.aggregates.count: takes no field")
  end)
end)

spec.describe("built-in aggregates fail on values that are not finite numbers", function()
  local BAD = {
    { 0 / 0, "is nan" }, { math.huge, "is inf" }, { -math.huge, "is -inf" },
    { "12", 'is "12" (a string)' }, { true, "is true (a boolean)" },
  }
  for _, fast in ipairs({ true, false }) do
    local op = fast and "fast operator" or "general operator"
    for _, bad in ipairs(BAD) do
      it(("%s: %s fails the job naming the field and the record"):format(op, tostring(bad[1])),
        function()
          local records = { { "a", 1, 2 }, { "a", 2, bad[1] }, { "a", 3, 4 } }
          raises(function()
            winjob.run(records, W.tumbling_event_time(10), function(w)
              return w:aggregate(A.sum(3))
            end, { env = { parallelism = 1 }, fast = fast })
          end, "weir.aggregates.sum(3): field 3 of the record ", " " .. bad[2]
            .. "; built-in aggregates take finite numbers", "record: (a,2,")
        end)
    end
    it(op .. ": a missing field fails naming it", function()
      raises(function()
        winjob.run({ { "a", 1 } }, W.tumbling_event_time(10), function(w)
          return w:aggregate(A.max(3))
        end, { env = { parallelism = 1 }, fast = fast })
      end, "weir.aggregates.max(3): the record has no field 3")
    end)
    it(op .. ": with on_error the record goes there, the others are aggregated", function()
      local tag, errors = weir.output_tag("errors"), nil
      local got = winjob.run({ { "a", 1, 2 }, { "a", 2, 0 / 0 }, { "a", 3, 4 } },
        W.tumbling_event_time(10), function(w)
          local r = w:aggregate(A.sum(3), shown)
          errors = r:get_side_output(tag):collect()
          return r
        end, { env = { parallelism = 1, on_error = tag }, fast = fast })
      eq(got, { { "a", 0, 10, 6 } })
      errors = errors:values()
      eq(#errors, 1)
      eq(errors[1].value[2], 2)
      assert(errors[1].error:find("field 3 of the record", 1, true), errors[1].error)
    end)
  end
end)

spec.describe("built-in aggregates with nothing to aggregate", function()
  it("no elements, or only late ones: nothing fires, the late ones go to the side output",
    function()
      for _, fast in ipairs({ true, false }) do
        local got = winjob.run({}, W.tumbling_event_time(10), function(w)
          return w:aggregate(A.sum(3))
        end, { env = { parallelism = 1 }, fast = fast })
        eq(got, {})
        local late
        got, late = winjob.run({ { wm = 100 }, { "a", 5, 1 }, { "b", 50, 0 / 0 } },
          W.tumbling_event_time(10), function(w)
            return w:aggregate(A.min(3))
          end, { env = { parallelism = 1 }, fast = fast })
        eq(got, {})
        eq(#late, 2) -- a late record's value is not read: the NaN is not an error
      end
    end)
end)

spec.describe("built-in aggregates on the fast operator", function()
  it("run in C on tumbling windows only", function()
    local watch = winjob.watch()
    winjob.run({ { "a", 1, 1 } }, W.tumbling_event_time(10), function(w)
      return w:aggregate(A.count())
    end)
    winjob.run({ { "a", 1, 1 } }, W.tumbling_event_time(10), function(w)
      return w:aggregate(LUA.count)
    end)
    watch.stop()
    local a, b = watch.nodes[1], watch.nodes[2]
    assert(a.node.instances[1].cagg ~= false, "count() in C")
    eq(b.node.instances[1].cagg, false)
    eq(windowing.stats(a.node, a.node.instances[1]).open_windows, 0)
  end)

  it("state listings see the batch not applied yet", function()
    local seen = {}
    local env = weir.env{ parallelism = 1 }
    local s = env:from_collection({ { "a", 1, 2 }, { "a", 2, 3 }, { "b", 15, 1 }, { "a", 3, 5 } })
    s = s:map(function(e)
      local st = env:status()
      for _, op in ipairs(st.operators) do
        local sub = op.subtasks[1]
        if sub.windows then
          seen[#seen + 1] = ("%d %d"):format(sub.open_windows, sub.elements)
        end
      end
      return e
    end)
    s:assign_timestamps_and_watermarks(winjob.punctuated)
      :key_by(function(e) return e[1] end)
      :window(W.tumbling_event_time(10))
      :aggregate(A.avg(3))
      :sink(function() end)
    env:execute()
    eq(seen, { "0 0", "1 1", "1 2", "2 3" })
  end)

  -- Without allowed lateness a window's timer stays in C (weir_aggs_due fires it) until a
  -- state reader or an element at or behind the watermark moves the timers to the Lua queue:
  -- the fires are in timer order (time, then registration) whichever holds them.
  it("fire in timer order with their timers in C, in the queue, or moved between them",
    function()
      local keys = {}
      for i = 0, 40 do
        keys[#keys + 1] = i % 3 == 0 and ("k" .. i) or i
      end
      -- out of order by up to 30 ms, the watermarks 31-40 ms behind the clock (so no element is
      -- at or behind one), but now and then (every other round) an element behind it
      local function ordered_records(n, behind)
        local out, t, wm = {}, 0, -1
        for _ = 1, n do
          t = t + math.random(0, 4)
          if math.random() < 0.2 then
            wm = math.max(wm, t - 31 - math.random(0, 9))
            out[#out + 1] = { wm = wm }
          end
          local ts = t - math.random(0, 30)
          if math.random() < behind then
            ts = math.max(0, wm - math.random(0, 30))
          end
          out[#out + 1] = { keys[math.random(1, #keys)], math.max(0, ts), math.random(1, 9) }
        end
        return out
      end
      math.randomseed(29)
      for round = 1, 30 do
        local records = ordered_records(300, round % 2 == 0 and 0.01 or 0)
        local reads = round % 3 -- 0: never, 1: now and then, 2: often
        local function each(_, env)
          if reads > 0 and math.random() < 0.02 * reads * reads then
            env:status()
          end
        end
        local function go(agg)
          math.randomseed(round) -- the same reads for both runs
          return winjob.run(records, W.tumbling_event_time(20), function(w)
            return w:aggregate(agg, shown)
          end, { env = { parallelism = 1 }, each = each })
        end
        local got, got_late = go(A.sum(3))
        local want, want_late = go(LUA.sum)
        local ok, err = pcall(eq, got, want)
        if not ok then
          error(("round %d: fires differ: %s"):format(round, err), 0)
        end
        eq(got_late, want_late)
        assert(#got > 20, "windows fired")
      end
    end)
end)
spec.finish()
