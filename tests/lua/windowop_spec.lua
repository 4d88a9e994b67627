-- Specs for the window operator, one or more per rule of SEMANTICS §5 (and §4.6-4.7, §8).
-- Watermarks are driven by the records: {wm = W} emits watermark W (punctuated), so each
-- test states exactly what the operator saw.
local spec = require("spec")
local weir = require("weir")
local it, eq, raises = spec.it, spec.eq, spec.raises
local W = weir.windows
local T = weir.triggers
local INF = math.huge

local winjob = require("lib.winjob")
local punctuated = winjob.punctuated

---Runs records {key, ts} and {wm = W} through key_by + window(...) + configure(windowed),
---returning what the window function emitted, and the late side output.
local function run(records, assigner, configure, finish)
  return winjob.run(records, assigner, configure, { finish = finish })
end

spec.describe("§5.2/5.9 lateness", function()
  it("buffers while W < end-1, then fires once W reaches end-1", function()
    eq(run({ { "a", 1 }, { wm = 9998 }, { "a", 2 }, { wm = 9999 }, { "a", 3 } },
      W.tumbling_event_time(10000)),
      { { "a", "[0, 10000)", "1 2" } })
  end)
  it("accepts an element within allowed lateness and fires at once", function()
    local got = run({ { "a", 1 }, { wm = 10000 }, { "a", 2 }, { wm = 10998 }, { "a", 3 } },
      W.tumbling_event_time(10000), function(w)
        return w:allowed_lateness(1000):process(function(key, ctx, elements, out)
          out({ key, #elements, ctx:current_watermark() })
        end)
      end)
    eq(got, { { "a", 1, 10000 }, { "a", 2, 10000 }, { "a", 3, 10998 } })
  end)
  it("drops an element once W >= end-1+L, to the late side output", function()
    local got, late = run({ { "a", 1 }, { wm = 10999 }, { "a", 2 } },
      W.tumbling_event_time(10000), function(w) return w:allowed_lateness(1000):process(
        function(key, _, elements, out) out({ key, #elements }) end) end)
    eq(got, { { "a", 1 } })
    eq(late, { { "a", 2 } })
  end)
  it("an element exactly at the watermark (ts + L == W) of a late window is late", function()
    local got, late = run({ { wm = 9999 }, { "a", 9999 } }, W.tumbling_event_time(10000))
    eq(got, {})
    eq(late, { { "a", 9999 } })
  end)
  it("a late record keeps its own timestamp on the side output", function()
    local env = weir.env()
    local late = weir.output_tag("late")
    local r = env:from_collection({ { "a", 5 }, { wm = 20000 }, { "a", 7 } })
      :assign_timestamps_and_watermarks(punctuated)
      :filter(function(e) return e.wm == nil end)
      :key_by(function(e) return e[1] end)
      :window(W.tumbling_event_time(10000))
      :side_output_late_data(late)
      :reduce(function(a) return a end)
    local ts = r:get_side_output(late)
      :process(function(e, ctx, out) out({ e[2], ctx:timestamp() }) end)
      :collect()
    env:execute()
    eq(ts:values(), { { 7, 7 } })
  end)
  it("an element is late only when every window it belongs to is late", function()
    -- sliding 10s/5s: element 12000 belongs to [10000,20000) and [5000,15000); W = 15000
    -- makes only the second late, so the element is kept (and not side-output)
    local got, late = run({ { "a", 6000 }, { wm = 15000 }, { "a", 12000 }, { wm = INF } },
      W.sliding_event_time(10000, 5000))
    eq(got, { { "a", "[0, 10000)", "6000" }, { "a", "[5000, 15000)", "6000" },
              { "a", "[10000, 20000)", "12000" } })
    eq(late, {})
  end)
  it("cleans up at max_timestamp + lateness, and no earlier", function()
    local got = run({ { "a", 1 }, { wm = 9999 }, { wm = 10998 }, { "a", 2 }, { wm = 10999 },
                      { "a", 3 } },
      W.tumbling_event_time(10000), function(w)
        return w:allowed_lateness(1000):process(function(_, _, elements, out)
          out(#elements)
        end)
      end)
    eq(got, { 1, 2 })
  end)
  it("guards the cleanup time against overflow (no cleanup for huge windows)", function()
    local got = run({ { "a", 1 }, { wm = INF } }, W.global(), function(w)
      return w:trigger(T.count(1)):allowed_lateness("1d"):process(function(_, _, e, out)
        out(#e)
      end)
    end)
    eq(got, { 1 })
  end)
end)

spec.describe("§5.3/§6 trigger results", function()
  it("FIRE keeps the contents, PURGE clears only the contents", function()
    local trig = weir.trigger{
      on_element = function(_, e)
        if e[2] == 2 then return weir.FIRE end
        if e[2] == 3 then return weir.PURGE end
        if e[2] == 5 then return weir.FIRE_AND_PURGE end
        return weir.CONTINUE
      end,
    }
    local got = run({ { "a", 1 }, { "a", 2 }, { "a", 3 }, { "a", 4 }, { "a", 5 }, { "a", 6 } },
      W.global(), function(w) return w:trigger(trig):process(function(_, _, elements, out)
        local v = {}
        for i, e in ipairs(elements) do v[i] = e[2] end
        out(table.concat(v, " "))
      end) end)
    eq(got, { "1 2", "4 5" })
  end)
  it("a trigger result that is not a TriggerResult fails naming the trigger", function()
    raises(function()
      run({ { "a", 1 } }, W.global(), function(w)
        return w:trigger(weir.trigger{ name = "mine", on_element = function() return true end })
          :process(function() end)
      end)
    end, "trigger mine", "not a trigger result")
  end)
end)

spec.describe("§5.5 timer callbacks", function()
  it("with L = 0 the trigger fires on the cleanup timer, then the state is cleared", function()
    local cleared = {}
    local got = run({ { "a", 1 }, { "b", 2 }, { wm = 9999 }, { "a", 3 }, { wm = INF } },
      W.tumbling_event_time(10000), function(w)
        return w:process({
          process = function(_, key, ctx, elements, out)
            local s = ctx:window_state()
            s.n = (s.n or 0) + 1
            out({ key, #elements, s.n })
          end,
          clear = function(_, ctx) cleared[#cleared + 1] = tostring(ctx:window()) end,
        })
      end)
    eq(got, { { "a", 1, 1 }, { "b", 1, 1 } })
    eq(cleared, { "[0, 10000)", "[0, 10000)" })
  end)
  it("clear() runs at cleanup even for a window that never fired", function()
    local cleared = 0
    run({ { "a", 1 }, { wm = INF } }, W.tumbling_event_time(10000), function(w)
      return w:trigger(weir.trigger{ on_element = function() return weir.CONTINUE end })
        :process({ process = function() end, clear = function() cleared = cleared + 1 end })
    end)
    eq(cleared, 1)
  end)
  it("global windows never clean up nor call clear (§5.10)", function()
    local cleared = 0
    local got = run({ { "a", 1 }, { "a", 2 }, { wm = INF } }, W.global(), function(w)
      return w:trigger(T.count(2)):allowed_lateness(5)
        :process({ process = function(_, _, _, e, out) out(#e) end,
                   clear = function() cleared = cleared + 1 end })
    end)
    eq(got, { 2 })
    eq(cleared, 0)
  end)
end)

spec.describe("§5.6 timer service", function()
  it("equal-time timers fire in registration order (weir's rule)", function()
    local got = run({ { "c", 1 }, { "b", 2 }, { "a", 3 }, { wm = INF } },
      W.tumbling_event_time(10000))
    eq(got, { { "c", "[0, 10000)", "1" }, { "b", "[0, 10000)", "2" },
              { "a", "[0, 10000)", "3" } })
  end)
  it("a timer registered while timers fire, already due, fires in the same pass", function()
    local trig = weir.trigger{
      on_element = function(_, _, _, w, ctx)
        ctx:register_event_time_timer(w:max_timestamp())
        return weir.CONTINUE
      end,
      on_event_time = function(_, t, w, ctx)
        if t == w:max_timestamp() then
          ctx:register_event_time_timer(t - 5000) -- already behind the watermark
          return weir.FIRE
        end
        return weir.FIRE_AND_PURGE
      end,
    }
    local got = run({ { "a", 1 }, { wm = 20000 } }, W.tumbling_event_time(10000), function(w)
      return w:trigger(trig):allowed_lateness(50000):process(function(_, ctx, e, out)
        out({ #e, ctx:current_watermark() })
      end)
    end)
    eq(got, { { 1, 20000 }, { 1, 20000 } })
  end)
  it("a timer behind the watermark registered outside firing waits for the next one", function()
    local trig = weir.trigger{
      on_element = function(_, _, _, _, ctx)
        ctx:register_event_time_timer(5)
        return weir.CONTINUE
      end,
      on_event_time = function() return weir.FIRE end,
    }
    local got = run({ { wm = 100 }, { "a", 150 }, { wm = 101 } }, W.global(), function(w)
      return w:trigger(trig):process(function(_, ctx, e, out)
        out({ #e, ctx:current_watermark() })
      end)
    end)
    eq(got, { { 1, 101 } })
  end)
  it("deleting a timer removes it", function()
    local trig = weir.trigger{
      on_element = function(_, e, _, _, ctx)
        ctx:register_event_time_timer(50)
        if e[2] == 2 then ctx:delete_event_time_timer(50) end
        return weir.CONTINUE
      end,
      on_event_time = function() return weir.FIRE end,
    }
    eq(run({ { "a", 1 }, { "a", 2 }, { wm = INF } }, W.global(), function(w)
      return w:trigger(trig):process(function(_, _, e, out) out(#e) end)
    end), {})
  end)
end)

-- The general operator skips a registration of a timer it knows is registered (weir.winstate:
-- inst.tke, tkp, tkc); these are the ways a known timer leaves the service, after which the
-- same registration must reach it again.
spec.describe("§5.6 repeated registrations (the known-timer cache)", function()
  it("a timer registered again after it fired fires again", function()
    local trig = weir.trigger{
      on_element = function(_, _, _, _, ctx)
        ctx:register_event_time_timer(500)
        return weir.CONTINUE
      end,
      on_event_time = function() return weir.FIRE end,
    }
    local got = run({ { "a", 1 }, { "a", 2 }, { wm = 600 }, { "a", 3 }, { "a", 4 },
                      { wm = 700 }, { wm = INF } }, W.tumbling_event_time(10000),
      function(w)
        return w:trigger(trig):allowed_lateness(100000):process(function(_, ctx, e, out)
          out({ #e, ctx:current_watermark() })
        end)
      end)
    eq(got, { { 2, 600 }, { 4, 700 }, { 4, INF } }) -- the last: the cleanup timer
  end)
  it("a timer registered again after its delete is registered", function()
    local trig = weir.trigger{
      on_element = function(_, e, _, _, ctx)
        ctx:register_event_time_timer(500)
        if e[2] == 2 then ctx:delete_event_time_timer(500) end
        return weir.CONTINUE
      end,
      on_event_time = function() return weir.FIRE end,
    }
    eq(run({ { "a", 1 }, { "a", 2 }, { "a", 3 }, { wm = 600 } }, W.global(), function(w)
      return w:trigger(trig):process(function(_, _, e, out) out(#e) end)
    end), { 3 })
  end)
  it("a trigger's delete of the cleanup-time timer is undone by the next element's cleanup "
    .. "registration", function()
    -- lateness 0: the trigger's timer at max_timestamp is the cleanup timer (one timer); the
    -- second element deletes it, and WindowOperator registers the cleanup timer again
    local trig = weir.trigger{
      on_element = function(_, e, _, w, ctx)
        if e[2] == 2 then
          ctx:delete_event_time_timer(w:max_timestamp())
        else
          ctx:register_event_time_timer(w:max_timestamp())
        end
        return weir.CONTINUE
      end,
      on_event_time = function(_, t, w) return t == w:max_timestamp() and weir.FIRE
        or weir.CONTINUE end,
      clear = function(_, w, ctx) ctx:delete_event_time_timer(w:max_timestamp()) end,
    }
    local got, late = run({ { "a", 1 }, { "a", 2 }, { wm = 9999 }, { "a", 3 } },
      W.tumbling_event_time(10000), function(w)
        return w:trigger(trig):process(function(_, _, e, out) out(#e) end)
      end)
    eq(got, { 2 })
    eq(late, { { "a", 3 } })
  end)
  it("a processing-time timer registered again after it fired fires again", function()
    local trig = weir.trigger{
      on_element = function(_, _, _, _, ctx)
        ctx:register_processing_time_timer(ctx:current_processing_time() + 1)
        return weir.CONTINUE
      end,
      on_processing_time = function() return weir.FIRE end,
    }
    local got = run({ { "a", 1 }, { "a", 2 } }, W.global(), function(w)
      return w:trigger(trig):process(function(_, _, e, out) out(#e) end)
    end)
    -- each element's timer is its own (a later time) or one already there: the window fires
    -- once per distinct registered time, at end of input at the latest
    eq(#got >= 1, true)
    eq(got[#got], 2)
  end)
  it("the timers a job leaves are those of the service, with or without repeats", function()
    -- sliding windows: each element registers every window's timer at max_timestamp + 5
    -- (the trigger's) besides the cleanup timers; an inspector sees the service's timers
    local trig = weir.trigger{
      on_element = function(_, _, _, w, ctx)
        ctx:register_event_time_timer(w:max_timestamp() + 5)
        return weir.CONTINUE
      end,
      on_event_time = function(_, t, w) return t == w:max_timestamp() + 5 and weir.FIRE
        or weir.CONTINUE end,
    }
    local got = run({ { "a", 1 }, { "a", 2 }, { "b", 3 }, { "a", 4 }, { wm = 5004 },
                      { "a", 5001 }, { wm = 20000 } }, W.sliding_event_time(10000, 5000),
      function(w)
        return w:trigger(trig):allowed_lateness(10):process(function(key, ctx, e, out)
          out({ key, tostring(ctx:window()), #e, ctx:current_watermark() })
        end)
      end)
    eq(got, { { "a", "[-5000, 5000)", 3, 5004 }, { "b", "[-5000, 5000)", 1, 5004 },
              { "a", "[0, 10000)", 4, 20000 }, { "b", "[0, 10000)", 1, 20000 },
              { "a", "[5000, 15000)", 1, 20000 } })
  end)
end)

spec.describe("§5.8 emitting", function()
  it("outputs and side outputs carry the window's max timestamp", function()
    local env = weir.env()
    local side = weir.output_tag("side")
    local r = env:from_collection({ { "a", 3 }, { wm = INF } })
      :assign_timestamps_and_watermarks(punctuated)
      :filter(function(e) return e.wm == nil end)
      :key_by(function(e) return e[1] end)
      :window(W.tumbling_event_time(10000))
      :process(function(_, ctx, _, out)
        out("main")
        ctx:output(side, "side")
      end)
    local function stamp(v, ctx, out) out({ v, ctx:timestamp() }) end
    local main = r:process(stamp):collect()
    local s = r:get_side_output(side):process(stamp):collect()
    env:execute()
    eq(main:values(), { { "main", 9999 } })
    eq(s:values(), { { "side", 9999 } })
  end)
  it("FIRE on an empty window emits nothing", function()
    local got = run({ { "a", 1 }, { wm = 9999 }, { wm = INF } }, W.tumbling_event_time(10000),
      function(w)
        return w:trigger(T.purging(T.continuous_event_time(2000)))
          :process(function(_, ctx, e, out) out({ #e, ctx:current_watermark() }) end)
      end)
    eq(got, { { 1, 9999 } })
  end)
end)

spec.describe("§8 window functions", function()
  it("reduce keeps the first value and folds later ones into it", function()
    eq(run({ { "a", 1 }, { "a", 2 }, { "a", 3 }, { wm = INF } }, W.tumbling_event_time(10000),
      function(w) return w:reduce(function(x, y) return { x[1], x[2] * 10 + y[2] } end) end),
      { { "a", 123 } })
  end)
  it("reduce with a process function gets the one reduced value", function()
    eq(run({ { "a", 1 }, { "a", 2 }, { wm = INF } }, W.tumbling_event_time(10000),
      function(w)
        return w:reduce(function(x, y) return { x[1], x[2] + y[2] } end,
          function(key, ctx, vals, out) out({ key, #vals, vals[1][2], tostring(ctx:window()) }) end)
      end), { { "a", 1, 3, "[0, 10000)" } })
  end)
  it("aggregate creates, adds and takes the result", function()
    eq(run({ { "a", 1 }, { "a", 2 }, { wm = INF } }, W.tumbling_event_time(10000),
      function(w)
        return w:aggregate({
          create = function() return { n = 0, sum = 0 } end,
          add = function(e, acc) acc.n, acc.sum = acc.n + 1, acc.sum + e[2]; return acc end,
          result = function(acc) return acc.sum / acc.n end,
        })
      end), { 1.5 })
  end)
  it("apply gets key, window, elements", function()
    eq(run({ { "a", 1 }, { wm = INF } }, W.tumbling_event_time(10000),
      function(w)
        return w:apply(function(key, win, e, out) out({ key, win.start, win.stop, #e }) end)
      end), { { "a", 0, 10000, 1 } })
  end)
  it("global_state is per key across windows", function()
    eq(run({ { "a", 1 }, { "a", 15000 }, { wm = INF } }, W.tumbling_event_time(10000),
      function(w)
        return w:process(function(_, ctx, _, out)
          local g = ctx:global_state()
          g.n = (g.n or 0) + 1
          out(g.n)
        end)
      end), { 1, 2 })
  end)
end)

spec.describe("state is freed at cleanup and observable", function()
  it("event-time windows leave nothing behind after the final watermark", function()
    local env = weir.env{ parallelism = 2 }
    env:from_collection({ { "a", 1 }, { "b", 2 }, { "a", 12000 }, { wm = INF } })
      :assign_timestamps_and_watermarks(punctuated)
      :filter(function(e) return e.wm == nil end)
      :key_by(function(e) return e[1] end)
      :window(W.tumbling_event_time(10000))
      :allowed_lateness(5000)
      :reduce(function(a) return a end)
      :name("sums")
      :collect()
    env:execute()
    local m = env:metrics()
    local t = m["sums"] or select(2, next(m))
    eq({ t.open_windows, t.elements, t.event_timers }, { 0, 0, 0 })
  end)
  it("count-window leftovers stay open (and are counted) at end of input", function()
    local env = weir.env()
    env:from_collection({ 1, 2, 3, 4, 5 }):key_by(function(v) return v % 2 end)
      :count_window(2):reduce(function(a, b) return a + b end):collect()
    env:execute()
    local _, t = next(env:metrics())
    eq({ t.open_windows, t.elements }, { 2, 1 })
    assert(t.store_bytes > 0)
  end)
end)

spec.describe("§5.11 build checks", function()
  it("allowed lateness must not be negative", function()
    local env = weir.env()
    raises(function()
      env:from_elements(1):key_by(function(x) return x end)
        :window(W.tumbling_event_time("1s")):allowed_lateness(-1)
    end, "allowed_lateness", "at least 0")
  end)
  it("reduce functions cannot be rich", function()
    local env = weir.env()
    raises(function()
      env:from_elements(1):key_by(function(x) return x end)
        :window(W.tumbling_event_time("1s")):reduce({ reduce = function(a) return a end })
    end, "reduce functions cannot be rich")
  end)
  it("an event-time window needs timestamps", function()
    local env = weir.env()
    env:from_elements(1):key_by(function(x) return x end)
      :window(W.tumbling_event_time("1s")):reduce(function(a) return a end):collect()
    raises(function() env:execute() end, "no timestamp", "assign_timestamps_and_watermarks")
  end)
end)

spec.finish()
