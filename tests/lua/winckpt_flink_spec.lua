-- Flink's WindowOperatorTest snapshot/restore cases (flink-streaming-java, operators/windowing):
-- each test there runs elements and watermarks into a harness, takes testHarness.snapshot(),
-- closes it and restores the snapshot into a new harness (initializeState) mid-test, and checks
-- the output against the same expectations. Here the elements before the restore point run in
-- one job, its window node's sections (weir.winckpt, encoded and decoded as a state file holds
-- them) are restored into a fresh job that runs the rest, and the two jobs' fires together must
-- be Flink's expected output (sorted, as assertOutputEqualsSorted compares), on both window
-- operators where the shape runs on both. Elements are {key, value, ts}; {wm = W} is a
-- watermark; SNAP is the restore point. Flink's harness never ends its input, so each job
-- stops at its last step (an END marker after it stops it): weir's end of input (the +inf
-- watermark) would fire more than Flink's expected output.
--
-- Every WindowOperatorTest method that calls testHarness.snapshot( is here (Flink master):
-- testSlidingEventTimeWindows{Reduce,Apply}, testTumblingEventTimeWindows{Reduce,Apply},
-- testSessionWindows, testSessionWindowsWithProcessFunction, testReduceSessionWindows,
-- testReduceSessionWindowsWithProcessFunction, testSessionWindowsWithCountTrigger,
-- testSessionWindowsWithContinuousEventTimeTrigger, testPointSessions, testCountTrigger.
-- EvictingWindowOperatorTest (as read) has none. The cases marked "restored" (after "restore points
-- Flink does not take" and in the loops) are Flink methods that run without a snapshot, given
-- one here: a restore must not change their expected output.
local spec = require("spec")
local weir = require("weir")
local checkpoint = require("weir.checkpoint")
local windowing = require("weir.windowing")
local aggwindow = require("weir.aggwindow")
local sessionop = require("weir.sessionop")
local it, eq = spec.it, spec.eq
local W = weir.windows
local SNAP = { snap = true }
local END = { snap = false } -- the end of a case's steps (appended by run_steps)
local STOP = "the case's steps are done"
local LATE = weir.output_tag("late-output")

local punctuated = weir.watermarks.custom{
  on_event = function(_, e, _, out)
    if e.wm then out:emit_watermark(e.wm) end
  end,
}:with_timestamp_assigner(function(e) return e[3] or 0 end)

local function sum(a, b) return { a[1], a[2] + b[2], a[3] } end

-- Flink's outputs: (key, sum) at the window's max timestamp ...
local function pass_through(key, ctx, els, out)
  out(("(%s,%d)@%s"):format(key, els[1][2], tostring(ctx:window():max_timestamp())))
end
-- ... SessionWindowFunction: (key-sum, start, end) of the elements
local function session_fn(key, ctx, els, out)
  local s = 0
  for _, e in ipairs(els) do
    s = s + e[2]
  end
  local w = ctx:window()
  out(("(%s-%d,%d,%d)@%d"):format(key, s, w.start, w.stop, w:max_timestamp()))
end
-- ... ReducedSessionWindowFunction: the same from the reduced element
local function reduced_session_fn(key, ctx, els, out)
  local w = ctx:window()
  out(("(%s-%d,%d,%d)@%d"):format(key, els[1][2], w.start, w.stop, w:max_timestamp()))
end

-- Runs steps (restore at SNAP) through key_by(e[1]) + window(assigner) + build(windowed).
local function run_steps(steps, assigner, build, opts)
  opts = opts or {}
  local cut
  for i, s in ipairs(steps) do
    if s == SNAP then
      cut = i
    end
  end
  assert(cut, "a case has a restore point")
  local function job(records, restore)
    local got, snap, fired = {}, nil, nil
    local env = weir.env{ parallelism = restore and opts.restore_parallelism
                          or opts.parallelism or 1 }
    local node
    local instantiate = windowing.instantiate
    windowing.instantiate = function(j, n)
      instantiate(j, n)
      node = n
      if restore then
        windowing.checkpoint_parts(j, n).state.restore(
          assert(checkpoint.decode_state(restore.bytes, 1))[1].value)
        for _, inst in ipairs(n.instances) do
          inst.watermark = restore.watermark
        end
      end
    end
    local w = env:from_collection(records)
      :map(function(e)
        if e == END then
          fired = #got
          error(STOP, 0) -- Flink's harness never ends its input: no +inf watermark here
        elseif e.snap then
          local part = windowing.checkpoint_parts(nil, node).state
          snap = { bytes = checkpoint.encode_state(1, { { name = "w", key_group = 0,
                                                          value = part.snapshot(),
                                                          raw = part.raw } }),
                   watermark = node.instances[1].watermark, fired = #got }
        end
        return e
      end):set_parallelism(1) -- one watermark, the same on every window subtask
      :filter(function(e) return not e.snap and e ~= END end):set_parallelism(1)
      :assign_timestamps_and_watermarks(punctuated):set_parallelism(1)
      :filter(function(e) return e.wm == nil end):set_parallelism(1)
      :key_by(function(e) return e[1] end)
      :window(assigner)
    if opts.trigger then
      w = w:trigger(opts.trigger)
    end
    if opts.lateness then
      w = w:allowed_lateness(opts.lateness)
    end
    if opts.evictor then
      w = w:evictor(opts.evictor)
    end
    if opts.late then
      w = w:side_output_late_data(LATE)
    end
    local out = build(w)
    out:sink(function(v) got[#got + 1] = v end)
    if opts.late then -- the late side output, the element with its own timestamp
      out:get_side_output(LATE):sink(function(v)
        got[#got + 1] = ("late (%s,%d)@%d"):format(v[1], v[2], v[3])
      end)
    end
    aggwindow.disabled = opts.general == true
    local ok, err = pcall(env.execute, env)
    aggwindow.disabled = false
    windowing.instantiate = instantiate
    local text = type(err) == "table" and err.text or tostring(err)
    if not ok and not (fired and text:find(STOP, 1, true)) then
      error(err, 0)
    end
    return got, snap, node, fired
  end
  local before, after = {}, {}
  for i = 1, cut do
    before[i] = steps[i]
  end
  before[#before + 1] = END -- the first job stops at the restore point too
  for i = cut + 1, #steps do
    after[#after + 1] = steps[i]
  end
  after[#after + 1] = END
  -- the first job's fires up to the restore point
  local got1, snap, node = job(before)
  local got2, _, _, fired2 = job(after, snap)
  local all = {}
  for i = 1, snap.fired do
    all[#all + 1] = got1[i]
  end
  for i = 1, fired2 do
    all[#all + 1] = got2[i]
  end
  table.sort(all)
  return all, node
end

local function expect(want)
  table.sort(want)
  return want
end

local function e(k, v, ts) return { k, v, ts } end
local function wm(t) return { wm = t } end

-- testTumblingEventTimeWindows (Reduce, Apply): restore after the watermark 1999
local TUMBLING = {
  e("key2", 1, 3999), e("key2", 1, 3000), e("key1", 1, 20), e("key1", 1, 0), e("key1", 1, 999),
  e("key2", 1, 1998), e("key2", 1, 1999), e("key2", 1, 1000), wm(999), wm(1999), SNAP,
  wm(2999), wm(3999), wm(4999), wm(5999), wm(6999), wm(7999),
}
local TUMBLING_OUT = { "(key1,3)@2999", "(key2,3)@2999", "(key2,2)@5999" }

-- testSlidingEventTimeWindows (Reduce, Apply): restore after the watermark 2999
local SLIDING = {
  e("key2", 1, 3999), e("key2", 1, 3000), e("key1", 1, 20), e("key1", 1, 0), e("key1", 1, 999),
  e("key2", 1, 1998), e("key2", 1, 1999), e("key2", 1, 1000), wm(999), wm(1999), wm(2999), SNAP,
  wm(3999), wm(4999), wm(5999), wm(6999), wm(7999),
}
local SLIDING_OUT = { "(key1,3)@999", "(key1,3)@1999", "(key2,3)@1999", "(key1,3)@2999",
                      "(key2,3)@2999", "(key2,5)@3999", "(key2,2)@4999", "(key2,2)@5999" }

local function reduce_pass(w) return w:reduce(sum, pass_through) end
local function apply_sum(w)
  return w:apply(function(key, win, els, out)
    local s = 0
    for _, x in ipairs(els) do
      s = s + x[2]
    end
    out(("(%s,%d)@%s"):format(key, s, tostring(win:max_timestamp())))
  end)
end
local sum_agg = { create = function() return 0 end, add = function(x, a) return a + x[2] end,
                  result = function(a) return a end, merge = function(a, b) return a + b end }
local function aggregate_pass(w)
  return w:aggregate(sum_agg, function(key, ctx, els, out)
    out(("(%s,%d)@%s"):format(key, els[1], tostring(ctx:window():max_timestamp())))
  end)
end

local SESSION = {
  e("key2", 1, 0), e("key2", 2, 1000), e("key2", 3, 2500), e("key1", 1, 10), e("key1", 2, 1000),
  SNAP,
  e("key1", 3, 2500), e("key2", 4, 5501), e("key2", 5, 6000), e("key2", 5, 6000),
  e("key2", 6, 6050), wm(12000), e("key2", 10, 15000), e("key2", 20, 15000), wm(17999),
}
local SESSION_OUT = { "(key1-6,10,5500)@5499", "(key2-6,0,5500)@5499",
                      "(key2-20,5501,9050)@9049", "(key2-30,15000,18000)@17999" }

local REDUCE_SESSION = {
  e("key2", 1, 0), e("key2", 2, 1000), e("key2", 3, 2500), SNAP,
  e("key1", 1, 10), e("key1", 2, 1000), e("key1", 3, 2500), e("key2", 4, 5501),
  e("key2", 5, 6000), e("key2", 5, 6000), e("key2", 6, 6050), wm(12000),
  e("key2", 10, 15000), e("key2", 20, 15000), wm(17999),
}

local COUNT_SESSION = {
  e("key2", 1, 0), e("key2", 2, 1000), e("key2", 3, 2500), e("key2", 4, 3500),
  e("key1", 1, 10), e("key1", 2, 1000), SNAP,
  e("key1", 3, 2500), e("key1", 1, 6000), e("key1", 2, 6500), e("key1", 3, 7000),
  e("key1", 10, 4500),
}
local COUNT_SESSION_OUT = { "(key2-10,0,6500)@6499", "(key1-22,10,10000)@9999" }

local COUNT = {
  e("key2", 1, 3000), e("key2", 1, 3999), e("key1", 1, 20), e("key1", 1, 0), e("key1", 1, 999),
  e("key2", 1, 1998), e("key2", 1, 1999), SNAP,
  e("key2", 1, 1000), e("key1", 1, 10999), e("key2", 1, 1000), e("key2", 1, 1000),
  e("key2", 1, 1000),
}
local COUNT_OUT = { "(key2,4)@inf", "(key1,4)@inf", "(key2,4)@inf" }

-- testSessionWindowsWithContinuousEventTimeTrigger: restore after the watermark 3000
local CONTINUOUS_SESSION = {
  e("key1", 1, 1500), e("key2", 1, 0), e("key2", 3, 2500), e("key2", 2, 1000), wm(2500),
  e("key2", 5, 4000), wm(3000), SNAP,
  e("key1", 2, 4000), e("key2", 4, 3500), wm(4000),
}
local CONTINUOUS_SESSION_OUT = { "(key1-1,1500,4500)@4499", "(key2-6,0,5500)@5499",
                                 "(key1-3,1500,7000)@6999", "(key2-15,0,7000)@6999" }

-- testPointSessions: value 33 gets a point window [t, t). weir has no custom assigners and a
-- session gap is above 0, so the nearest weir shape is a dynamic gap of 1 ms for those: the
-- window [t, t + 1) lies inside the session as Flink's point window does (it merges into it
-- and changes neither its start nor its end).
local POINT = {
  e("key2", 1, 0), e("key2", 33, 1000), SNAP,
  e("key2", 33, 2500), e("key1", 1, 10), e("key1", 2, 1000), e("key1", 33, 2500), wm(12000),
}
local POINT_OUT = { "(key1-36,10,4000)@3999", "(key2-67,0,3000)@2999" }
local point_sessions = W.dynamic_event_time_session(function(v)
  return v[2] == 33 and 1 or 3000
end)

-- testContinuousWatermarkTrigger (no snapshot in Flink): restore after the watermark 3000,
-- with both keys' next continuous timers (6000) pending
local CONTINUOUS = {
  e("key1", 1, 0), e("key2", 1, 3000), e("key2", 1, 3999), e("key1", 1, 20), e("key1", 1, 999),
  e("key2", 1, 1998), e("key2", 1, 1999), e("key2", 1, 1000), wm(1000), wm(2000), wm(3000),
  SNAP, wm(4000), wm(5000), wm(6000), wm(7000), wm(8000),
}
local CONTINUOUS_OUT = { "(key1,3)@inf", "(key1,3)@inf", "(key2,5)@inf" }

-- The session lateness cases (no snapshot in Flink): restore after the watermark 14600, when
-- the fired sessions (1000-11500 and 11600-14600) are kept for their allowed lateness.
local LATE_SESSION = {
  e("key2", 1, 1000), wm(1999), e("key2", 1, 2000), wm(4998), e("key2", 1, 4500),
  e("key2", 1, 8500), wm(7400), e("key2", 1, 7000), wm(11501), e("key2", 1, 11600), wm(14600),
  SNAP, e("key2", 1, 10000), e("key2", 1, 14500), wm(20000), wm(100000),
}
-- testNotSideOutputDueToLatenessSessionWithHugeLateness (lateness 10000)
local HUGE_LATENESS_OUT = { "(key2-5,1000,11500)@11499", "(key2-1,11600,14600)@14599",
                            "(key2-7,1000,14600)@14599", "(key2-8,1000,17500)@17499" }
-- testNotSideOutputDueToLatenessSessionWithLateness (lateness 10)
local SMALL_LATENESS_OUT = { "(key2-5,1000,11500)@11499", "(key2-1,11600,14600)@14599",
                             "(key2-2,10000,14600)@14599", "(key2-3,10000,17500)@17499" }
-- testDropDueToLatenessSessionWithLatenessPurgingTrigger (lateness 10, purging)
local PURGING_LATENESS_OUT = { "(key2-5,1000,11500)@11499", "(key2-1,11600,14600)@14599",
                               "(key2-1,10000,14600)@14599", "(key2-1,10000,17500)@17499" }
-- testNotSideOutputDueToLatenessSessionWithHugeLatenessPurgingTrigger (lateness 10000, purging)
local HUGE_PURGING_OUT = { "(key2-5,1000,11500)@11499", "(key2-1,11600,14600)@14599",
                           "(key2-1,1000,14600)@14599", "(key2-1,1000,17500)@17499" }

local function session_apply(key, win, els, out)
  local s = 0
  for _, x in ipairs(els) do
    s = s + x[2]
  end
  out(("(%s-%d,%d,%d)@%d"):format(key, s, win.start, win.stop, win:max_timestamp()))
end
local function reduce_session(w) return w:reduce(sum, reduced_session_fn) end
local purging_event_time = weir.triggers.purging(weir.triggers.event_time())

for _, general in ipairs({ false, true }) do
  local on = general and " (general operator)" or ""
  it("testTumblingEventTimeWindowsReduce" .. on, function()
    local got, node = run_steps(TUMBLING, W.tumbling_event_time(3000), reduce_pass,
      { general = general })
    eq(node.window_op == aggwindow, not general, "the operator")
    eq(got, expect(TUMBLING_OUT))
  end)
  it("testSlidingEventTimeWindows, an aggregate" .. on, function()
    local got, node = run_steps(SLIDING, W.sliding_event_time(3000, 1000), aggregate_pass,
      { general = general })
    eq(node.window_op == aggwindow, not general, "the operator (sliced)")
    eq(got, expect(SLIDING_OUT))
  end)
  it("testSlidingEventTimeWindowsReduce" .. on, function()
    eq(run_steps(SLIDING, W.sliding_event_time(3000, 1000), reduce_pass, { general = general }),
      expect(SLIDING_OUT))
  end)
  -- Flink's WindowFunction and ProcessWindowFunction variants are one shape in weir: reduce
  -- with a process function
  for _, name in ipairs({ "testReduceSessionWindows",
                          "testReduceSessionWindowsWithProcessFunction" }) do
    it(name .. on, function()
      local got, node = run_steps(REDUCE_SESSION, W.event_time_session(3000), reduce_session,
        { general = general })
      eq(node.window_op == sessionop, not general, "the operator (session)")
      eq(got, expect(SESSION_OUT))
    end)
  end
  it("testNotSideOutputDueToLatenessSessionWithHugeLateness, restored" .. on, function()
    local got, node = run_steps(LATE_SESSION, W.event_time_session(3000), reduce_session,
      { general = general, lateness = 10000 })
    eq(node.window_op == sessionop, not general, "the operator (session)")
    eq(got, expect(HUGE_LATENESS_OUT))
  end)
  it("testNotSideOutputDueToLatenessSessionWithLateness, restored" .. on, function()
    local got, node = run_steps(LATE_SESSION, W.event_time_session(3000), reduce_session,
      { general = general, lateness = 10 })
    eq(node.window_op == sessionop, not general, "the operator (session)")
    eq(got, expect(SMALL_LATENESS_OUT))
  end)
end

it("testTumblingEventTimeWindowsApply", function()
  eq(run_steps(TUMBLING, W.tumbling_event_time(3000), apply_sum), expect(TUMBLING_OUT))
end)

it("testSlidingEventTimeWindowsApply", function()
  eq(run_steps(SLIDING, W.sliding_event_time(3000, 1000), apply_sum), expect(SLIDING_OUT))
end)

it("testSessionWindows", function()
  eq(run_steps(SESSION, W.event_time_session(3000), function(w) return w:apply(session_apply) end),
    expect(SESSION_OUT))
end)

it("testSessionWindowsWithProcessFunction", function()
  eq(run_steps(SESSION, W.event_time_session(3000), function(w) return w:process(session_fn) end),
    expect(SESSION_OUT))
end)

it("testSessionWindowsWithCountTrigger", function()
  eq(run_steps(COUNT_SESSION, W.event_time_session(3000),
    function(w) return w:process(session_fn) end,
    { trigger = weir.triggers.purging(weir.triggers.count(4)) }), expect(COUNT_SESSION_OUT))
end)

it("testSessionWindowsWithContinuousEventTimeTrigger", function()
  eq(run_steps(CONTINUOUS_SESSION, W.event_time_session(3000),
    function(w) return w:apply(session_apply) end,
    { trigger = weir.triggers.continuous_event_time(2000) }), expect(CONTINUOUS_SESSION_OUT))
end)

it("testPointSessions (a 1 ms gap for the point windows)", function()
  eq(run_steps(POINT, point_sessions, function(w) return w:apply(session_apply) end),
    expect(POINT_OUT))
end)

it("testCountTrigger", function()
  eq(run_steps(COUNT, W.global(), reduce_pass,
    { trigger = weir.triggers.purging(weir.triggers.count(4)) }), expect(COUNT_OUT))
end)

-- restore points Flink does not take
it("testContinuousWatermarkTrigger, restored", function()
  eq(run_steps(CONTINUOUS, W.global(), reduce_pass,
    { trigger = weir.triggers.continuous_event_time(3000) }), expect(CONTINUOUS_OUT))
end)

it("testDropDueToLatenessSessionWithLatenessPurgingTrigger, restored", function()
  eq(run_steps(LATE_SESSION, W.event_time_session(3000), reduce_session,
    { trigger = purging_event_time, lateness = 10 }), expect(PURGING_LATENESS_OUT))
end)

it("testNotSideOutputDueToLatenessSessionWithHugeLatenessPurgingTrigger, restored", function()
  eq(run_steps(LATE_SESSION, W.event_time_session(3000), reduce_session,
    { trigger = purging_event_time, lateness = 10000 }), expect(HUGE_PURGING_OUT))
end)

-- testSideOutputDueToLatenessSessionZeroLateness (no snapshot in Flink): the element at
-- 10000 comes after the restore and is late (its session would end at 13000 <= 14600)
local ZERO_LATENESS_OUT = { "(key2-5,1000,11500)@11499", "(key2-1,11600,14600)@14599",
                            "late (key2,1)@10000", "(key2-1,14500,17500)@17499" }
for _, general in ipairs({ false, true }) do
  local on = general and " (general operator)" or ""
  it("testSideOutputDueToLatenessSessionZeroLateness, restored" .. on, function()
    local got, node = run_steps(LATE_SESSION, W.event_time_session(3000), reduce_session,
      { general = general, late = true })
    eq(node.window_op == sessionop, not general, "the operator (session)")
    eq(got, expect(ZERO_LATENESS_OUT))
  end)
end

-- testSideOutputDueToLatenessSessionZeroLatenessPurgingTrigger (no snapshot in Flink)
local PURGING_LATE_SESSION = {
  e("key2", 1, 1000), wm(1999), e("key2", 1, 2000), wm(4998), e("key2", 1, 4500),
  e("key2", 1, 8500), wm(7400), e("key2", 1, 7000), wm(11501), e("key2", 1, 11600), wm(14600),
  SNAP, e("key2", 1, 10000), e("key2", 1, 10100), e("key2", 1, 14500), wm(20000), wm(100000),
}
it("testSideOutputDueToLatenessSessionZeroLatenessPurgingTrigger, restored", function()
  eq(run_steps(PURGING_LATE_SESSION, W.event_time_session(3000), reduce_session,
    { trigger = purging_event_time, late = true }),
    expect({ "(key2-5,1000,11500)@11499", "(key2-1,11600,14600)@14599", "late (key2,1)@10000",
             "late (key2,1)@10100", "(key2-1,14500,17500)@17499" }))
end)

-- EvictingWindowOperatorTest (no snapshot there): testCountTrigger (a reduce over what the
-- evictor leaves) and testCountTriggerWithApply, restored before the last two elements; the
-- evictor's element list (with timestamps) is in the checkpoint
local EVICT_COUNT = {
  e("key2", 1, 3000), e("key2", 1, 3999), e("key1", 1, 20), e("key1", 1, 0), e("key1", 1, 999),
  e("key2", 1, 1998), e("key2", 1, 1999), e("key2", 1, 1000), SNAP,
  e("key1", 1, 10999), e("key2", 1, 1000),
}
local EVICT_COUNT_OUT = { "(key2,2)@inf", "(key2,4)@inf", "(key1,2)@inf", "(key1,4)@inf",
                          "(key2,4)@inf" }
it("EvictingWindowOperatorTest testCountTrigger, restored", function()
  eq(run_steps(EVICT_COUNT, W.global(), reduce_pass,
    { trigger = weir.triggers.count(2), evictor = weir.evictors.count(4) }),
    expect(EVICT_COUNT_OUT))
end)
it("EvictingWindowOperatorTest testCountTriggerWithApply, restored", function()
  eq(run_steps(EVICT_COUNT, W.global(), apply_sum,
    { trigger = weir.triggers.count(2), evictor = weir.evictors.count(4) }),
    expect(EVICT_COUNT_OUT))
end)
-- testTimeEvictorEvictBefore and testTimeEvictorEvictAfter: the time evictor reads the kept
-- elements' timestamps, restored with them
local EVICT_TIME_BEFORE = {
  e("key2", 1, 1000), e("key2", 1, 3999), e("key1", 1, 20), e("key1", 1, 0), e("key1", 1, 999),
  e("key1", 1, 5999), e("key2", 1, 3500), e("key2", 1, 2001), e("key2", 1, 1001), SNAP,
  e("key1", 1, 6500), e("key2", 1, 1002),
}
it("EvictingWindowOperatorTest testTimeEvictorEvictBefore, restored", function()
  eq(run_steps(EVICT_TIME_BEFORE, W.tumbling_event_time(4000), apply_sum,
    { trigger = weir.triggers.count(2), evictor = weir.evictors.time(2000) }),
    expect({ "(key2,1)@3999", "(key1,2)@3999", "(key2,3)@3999", "(key1,2)@7999",
             "(key2,3)@3999" }))
end)
local EVICT_TIME_AFTER = {
  e("key2", 1, 1000), e("key2", 1, 4000), e("key1", 1, 20), e("key1", 1, 0), e("key1", 1, 999),
  e("key2", 1, 3500), e("key2", 1, 2001), e("key2", 1, 1001), SNAP,
  e("key1", 1, 10999), e("key2", 1, 1002),
}
it("EvictingWindowOperatorTest testTimeEvictorEvictAfter, restored", function()
  eq(run_steps(EVICT_TIME_AFTER, W.global(), apply_sum,
    { trigger = weir.triggers.count(2), evictor = weir.evictors.time(2000, { after = true }) }),
    expect({ "(key2,2)@inf", "(key1,2)@inf", "(key2,3)@inf", "(key1,4)@inf", "(key2,5)@inf" }))
end)
-- testTumblingWindowWithApply: a count evictor of 4 on tumbling windows, restored with key1's
-- window holding six elements
it("EvictingWindowOperatorTest testTumblingWindowWithApply, restored", function()
  eq(run_steps({
    e("key1", 1, 10), e("key1", 1, 100), wm(1999), e("key1", 1, 1997), e("key1", 1, 1998),
    e("key1", 1, 2310), e("key1", 1, 2310), SNAP, e("key2", 1, 2310), e("key2", 1, 2310),
    wm(3999),
  }, W.tumbling_event_time(4000), apply_sum, { evictor = weir.evictors.count(4) }),
    expect({ "(key1,4)@3999", "(key2,2)@3999" }))
end)

-- testDynamicEventTimeSessionWindows (no snapshot in Flink): restore inside key2's second
-- session, on the general operator (apply, as Flink's WindowFunction) and, as a reduce, on
-- both operators
local DYNAMIC = {
  e("key1", 3, 10), e("key2", 4, 5000), e("key2", 5, 6000), wm(8999), e("key2", 1, 9000),
  e("key2", 2, 10000), SNAP, e("key2", 10, 10500), wm(12999), e("key2", 10, 13000),
  e("key2", 10, 13500), e("key2", 1, 14000), wm(16999),
}
local DYNAMIC_OUT = { "(key1-3,10,3010)@3009", "(key2-9,5000,8000)@7999",
                      "(key2-13,9000,12000)@11999", "(key2-21,13000,16000)@15999" }
local function dynamic_gaps()
  return W.dynamic_event_time_session(function(v)
    if v[1] == "key1" then
      return 3000
    end
    return v[2] == 10 and 1000 or 2000
  end)
end
it("testDynamicEventTimeSessionWindows, restored", function()
  eq(run_steps(DYNAMIC, dynamic_gaps(), function(w) return w:apply(session_apply) end),
    expect(DYNAMIC_OUT))
end)
for _, general in ipairs({ false, true }) do
  it("testDynamicEventTimeSessionWindows as a reduce, restored"
      .. (general and " (general operator)" or ""), function()
    local got, node = run_steps(DYNAMIC, dynamic_gaps(), reduce_session, { general = general })
    eq(node.window_op == sessionop, not general, "the operator (session)")
    eq(got, expect(DYNAMIC_OUT))
  end)
end

-- Processing time (WindowOperatorTest's testProcessingTime* take no snapshot: restore points
-- added). A replay drives the virtual clock as Flink's setProcessingTime does: text holds
-- "@T" lines and records "key" (the element {key, 1}), and a line SNAP, the restore point;
-- the second job's replay starts at its first "@T" line's time, and each job stops at its
-- last line (the end of input would fire the pending processing-time timers).
local function run_pt(text, assigner, build)
  local before, after = text:match("^(.-)SNAP\n(.*)$")
  assert(before, "a case has a restore point")
  local function job(lines, restore)
    local path = os.tmpname()
    local fh = assert(io.open(path, "wb"))
    fh:write(lines, "END\n")
    fh:close()
    local got, snap, fired = {}, nil, nil
    local env = weir.env{}
    local node
    local instantiate = windowing.instantiate
    windowing.instantiate = function(j, n)
      instantiate(j, n)
      node = n
      if restore then
        windowing.checkpoint_parts(j, n).state.restore(
          assert(checkpoint.decode_state(restore.bytes, 1))[1].value)
      end
    end
    local w = env:replay(path)
      :map(function(line)
        if line == "END" then
          fired = #got
          error(STOP, 0)
        elseif line == "SNAP" then
          local part = windowing.checkpoint_parts(nil, node).state
          snap = { bytes = checkpoint.encode_state(1, { { name = "w", key_group = 0,
                                                          value = part.snapshot(),
                                                          raw = part.raw } }), fired = #got }
        end
        return { line, 1 }
      end)
      :filter(function(v) return v[1] ~= "SNAP" end)
      :key_by(function(v) return v[1] end)
      :window(assigner)
    build(w):sink(function(v) got[#got + 1] = v end)
    local ok, err = pcall(env.execute, env)
    windowing.instantiate = instantiate
    os.remove(path)
    local msg = type(err) == "table" and err.text or tostring(err)
    if not ok and not (fired and msg:find(STOP, 1, true)) then
      error(err, 0)
    end
    return got, snap, fired
  end
  local got1, snap = job(before .. "SNAP\n")
  local got2, _, fired2 = job(after, snap)
  local all = {}
  for i = 1, snap.fired do
    all[#all + 1] = got1[i]
  end
  for i = 1, fired2 do
    all[#all + 1] = got2[i]
  end
  table.sort(all)
  return all
end

it("testProcessingTimeTumblingWindows, restored", function()
  eq(run_pt("@3 key2\nkey2\nkey2\nkey1\nkey1\nSNAP\n@5000\nkey1\nkey1\nkey1\n@7000\n",
    W.tumbling_processing_time(3000), reduce_pass),
    expect({ "(key2,3)@2999", "(key1,2)@2999", "(key1,3)@5999" }))
end)

it("testProcessingTimeSlidingWindows, restored", function()
  eq(run_pt("@3 key2\n@1000\nkey2\nkey2\n@2000\nkey1\nkey1\nSNAP\n@3000\nkey1\nkey1\nkey1\n"
    .. "@7000\n", W.sliding_processing_time(3000, 1000), reduce_pass),
    expect({ "(key2,1)@999", "(key2,3)@1999", "(key2,3)@2999", "(key1,2)@2999",
             "(key2,2)@3999", "(key1,5)@3999", "(key1,5)@4999", "(key1,3)@5999" }))
end)

it("testProcessingTimeSessionWindows, restored", function()
  eq(run_pt("@3 key2\n@1000 key2\nSNAP\n@5000\nkey2\nkey2\nkey1\nkey1\nkey1\n@10000\n",
    W.processing_time_session(3000), reduce_pass),
    expect({ "(key2,2)@3999", "(key2,2)@7999", "(key1,3)@7999" }))
end)

it("a restore at parallelism 2 gives the same output", function()
  eq(run_steps(SESSION, W.event_time_session(3000), function(w) return w:process(session_fn) end,
    { parallelism = 2 }), expect(SESSION_OUT))
  eq(run_steps(TUMBLING, W.tumbling_event_time(3000), reduce_pass, { parallelism = 2 }),
    expect(TUMBLING_OUT))
end)

-- parallelism 2 -> 3: each key group's sections go to the subtask that owns it at 3
local function rescaled(general)
  return { parallelism = 2, restore_parallelism = 3, general = general }
end
for _, general in ipairs({ false, true }) do
  local on = general and " (general operator)" or ""
  it("testTumblingEventTimeWindowsReduce, restored at parallelism 3 from 2" .. on, function()
    eq(run_steps(TUMBLING, W.tumbling_event_time(3000), reduce_pass, rescaled(general)),
      expect(TUMBLING_OUT))
  end)
  it("testSlidingEventTimeWindows (an aggregate), restored at parallelism 3 from 2" .. on,
    function()
      eq(run_steps(SLIDING, W.sliding_event_time(3000, 1000), aggregate_pass, rescaled(general)),
        expect(SLIDING_OUT))
    end)
  it("testReduceSessionWindows, restored at parallelism 3 from 2" .. on, function()
    eq(run_steps(REDUCE_SESSION, W.event_time_session(3000), reduce_session, rescaled(general)),
      expect(SESSION_OUT))
  end)
  it("testNotSideOutputDueToLatenessSessionWithHugeLateness, restored at parallelism 3 from 2"
      .. on, function()
    local o = rescaled(general)
    o.lateness = 10000
    eq(run_steps(LATE_SESSION, W.event_time_session(3000), reduce_session, o),
      expect(HUGE_LATENESS_OUT))
  end)
end

it("testSessionWindowsWithCountTrigger, restored at parallelism 3 from 2", function()
  eq(run_steps(COUNT_SESSION, W.event_time_session(3000),
    function(w) return w:process(session_fn) end,
    { trigger = weir.triggers.purging(weir.triggers.count(4)), parallelism = 2,
      restore_parallelism = 3 }), expect(COUNT_SESSION_OUT))
end)

it("testSessionWindowsWithContinuousEventTimeTrigger, restored at parallelism 3 from 2",
  function()
    eq(run_steps(CONTINUOUS_SESSION, W.event_time_session(3000),
      function(w) return w:apply(session_apply) end,
      { trigger = weir.triggers.continuous_event_time(2000), parallelism = 2,
        restore_parallelism = 3 }), expect(CONTINUOUS_SESSION_OUT))
  end)

spec.finish()
