-- Specs for weir's time range (API.md, Time range): what timestamps, timer times, watermarks
-- and integer options outside it give, on the general and the fast window operator alike.
local spec = require("spec")
local weir = require("weir")
local aggwindow = require("weir.aggwindow")
local it, eq, raises = spec.it, spec.eq, spec.raises
local W = weir.windows
local INF = math.huge

local BAD = {
  { 9.3e18, "9.3e+18, outside the time range [-2^52, 2^52] ms" },
  { -9.3e18, "-9.3e+18, outside the time range" },
  { 2 ^ 53, "9007199254740992, outside the time range" },
  { 2 ^ 53 + 2, "9007199254740994, outside the time range" },
  { 2 ^ 52 + 1, "4503599627370497, outside the time range" },
  { INF, "inf, outside the time range" },
  { -INF, "-inf, outside the time range" },
  { 0 / 0, "nan, not a number of milliseconds" },
  { 1.5, "1.5, not a whole number of milliseconds" },
  { "1000", 'the string "1000", not a number of milliseconds' },
  { false, "the boolean false, not a number of milliseconds" },
  { {}, "a table, not a number of milliseconds" },
}

---Records 1..5 whose timestamp is their value, except record 3, whose assigner returns bad
---(nil when bad is nil), into a tumbling window run by the fast or the general operator.
local function job(bad, fast, on_error)
  aggwindow.disabled = not fast
  local errors = weir.output_tag("errors")
  local env = weir.env{ on_error = on_error and errors or nil }
  local stamped = env:from_collection({ 1, 2, 3, 4, 5 })
    :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
      :with_timestamp_assigner(function(v) if v == 3 then return bad end return v end))
  local win = stamped:key_by(function() return "k" end)
    :window(W.tumbling_event_time(10))
  local out = fast and win:reduce(function(a, b) return a + b end)
    or win:process(function(_, _, els, o) local n = 0 for _, e in ipairs(els) do n = n + e end
      o(n) end)
  local got, errs = out:collect(), on_error and stamped:get_side_output(errors):collect()
  local ok, err = pcall(env.execute, env, "ts")
  aggwindow.disabled = false
  if not ok then
    error(err, 0)
  end
  return got:values(), errs and errs:values()
end

spec.describe("the timestamp assigner", function()
  for _, fast in ipairs({ true, false }) do
    local op = fast and "fast" or "general"
    it(op .. " operator: a value outside the range fails the job naming it and the record",
      function()
        for _, b in ipairs(BAD) do
          raises(function() job(b[1], fast) end, "assign_timestamps_and_watermarks (",
            "the timestamp assigner returned " .. b[2], "record: 3")
        end
        raises(function() job(nil, fast) end,
          "the timestamp assigner returned nil, not a number of milliseconds", "record: 3")
      end)
    it(op .. " operator: with on_error the record goes to the error side output", function()
      for _, b in ipairs(BAD) do
        local got, errs = job(b[1], fast, true)
        eq(got, { 12 }) -- 1 + 2 + 4 + 5: the others are all there
        eq(#errs, 1)
        eq(errs[1].value, 3)
        assert(errs[1].error:find("the timestamp assigner returned " .. b[2], 1, true),
          errs[1].error)
        assert(errs[1].operator:find("assign_timestamps_and_watermarks (", 1, true))
      end
    end)
    it(op .. " operator: the ends of the range are timestamps", function()
      eq(job(2 ^ 52, fast), { 12, 3 })
      eq(job(-2 ^ 52, fast), { 3, 12 })
    end)
  end
end)

spec.describe("an event-time window after a global window", function()
  for _, fast in ipairs({ true, false }) do
    it((fast and "fast" or "general") .. " operator: a +inf timestamp fails naming it",
      function()
        aggwindow.disabled = not fast
        local env = weir.env()
        local w = env:from_collection({ 1, 2 })
          :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
            :with_timestamp_assigner(function(v) return v end))
          :key_by(function() return "k" end):window(W.global()):trigger(weir.triggers.count(2))
          :process(function(_, _, els, out) out(#els) end)
          :key_by(function() return "k" end):window(W.tumbling_event_time(10))
        local r = fast and w:reduce(function(a) return a end)
          or w:process(function(_, _, _, out) out(1) end)
        r:collect()
        local ok, err = pcall(env.execute, env)
        aggwindow.disabled = false
        assert(not ok)
        eq(type(err), "table")
        assert(err.text:find("the record's timestamp is inf, outside the time range", 1,
          true), err.text)
      end)
    it((fast and "fast" or "general") .. " operator: so does a window's result beyond 2^52",
      function()
        aggwindow.disabled = not fast
        local env = weir.env()
        local w = env:from_collection({ 2 ^ 52 - 5, 2 ^ 52 })
          :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
            :with_timestamp_assigner(function(v) return v end))
          :key_by(function() return "k" end):window(W.tumbling_event_time(10))
          :reduce(function(a, b) return a + b end) -- [2^52 - 6, 2^52 + 4): max 2^52 + 3
          :key_by(function() return "k" end):window(W.tumbling_event_time(10))
        local r = fast and w:reduce(function(a) return a end)
          or w:process(function(_, _, _, out) out(1) end)
        r:collect()
        local ok, err = pcall(env.execute, env)
        aggwindow.disabled = false
        assert(not ok)
        assert(err.text:find("the record's timestamp is 4503599627370499, outside the time "
          .. "range [-2^52, 2^52] ms (a window's results carry its max timestamp", 1, true),
          err.text)
      end)
  end
end)

---Runs a user trigger that registers (or deletes) a timer at time t for the element "x".
local function timer_job(t, what)
  local env = weir.env()
  local fired = {}
  env:from_collection({ "x" })
    :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
      :with_timestamp_assigner(function() return 5 end))
    :key_by(function() return "k" end)
    :window(W.global())
    :trigger(weir.trigger{ name = "tt",
      on_element = function(_, _, _, _, ctx) ctx[what](ctx, t) return weir.CONTINUE end,
      on_event_time = function(_, time) fired[#fired + 1] = time return weir.FIRE end,
      on_processing_time = function(_, time) fired[#fired + 1] = time return weir.FIRE end,
    })
    :process(function(_, _, els, out) out(#els) end)
    :collect()
  env:execute()
  return fired
end

spec.describe("trigger timers", function()
  it("take whole numbers within +-2^53 and +inf", function()
    eq(timer_job(2 ^ 53, "register_event_time_timer"), { 2 ^ 53 })
    eq(timer_job(-2 ^ 53, "register_event_time_timer"), { -2 ^ 53 })
    eq(timer_job(INF, "register_event_time_timer"), { INF }) -- fires at the end of input
    eq(timer_job(INF, "delete_event_time_timer"), {})
  end)
  it("fail the job naming the trigger and the time otherwise", function()
    for _, what in ipairs({ "register_event_time_timer", "delete_event_time_timer",
                            "register_processing_time_timer" }) do
      for _, b in ipairs({ { 0 / 0, "nan, not a number of milliseconds" },
                           { "100", 'the string "100", not a number of milliseconds' },
                           { -INF, "-inf, outside the time range [-2^53, 2^53] ms" },
                           { 2 ^ 53 + 2, "9007199254740994, outside the time range" },
                           { 1.5, "1.5, not a whole number of milliseconds" } }) do
        raises(function() timer_job(b[1], what) end,
          "time_range_spec.lua:", "trigger tt: " .. what .. " was given " .. b[2])
      end
    end
  end)
end)

---A custom generator that emits w after the first record.
local function wm_job(w)
  local env = weir.env()
  env:from_collection({ 1 })
    :assign_timestamps_and_watermarks(weir.watermarks.custom{
      on_event = function(_, _, _, out) out:emit_watermark(w) end,
    }:with_timestamp_assigner(function(v) return v end))
    :process(function(_, ctx, out) out(ctx:current_watermark()) end)
    :collect()
  env:execute()
end

spec.describe("custom watermarks", function()
  it("take whole numbers within +-2^53 and +-inf", function()
    for _, w in ipairs({ 2 ^ 53, -2 ^ 53, INF, -INF, 0 }) do
      wm_job(w)
    end
  end)
  it("fail the job naming the value otherwise", function()
    for _, b in ipairs({ { 0 / 0, "nan, not a number of milliseconds" },
                         { "5", 'the string "5", not a number of milliseconds' },
                         { 2 ^ 53 + 2, "9007199254740994, outside the time range" },
                         { 0.5, "0.5, not a whole number of milliseconds" } }) do
      raises(function() wm_job(b[1]) end, "time_range_spec.lua:",
        "emit_watermark was given " .. b[2])
    end
  end)
end)

spec.describe("dynamic session gaps", function()
  it("must be whole numbers in 1..2^51", function()
    for _, g in ipairs({ 1.5, 2 ^ 51 + 1, 0, INF, 0 / 0, "5" }) do
      local env = weir.env()
      env:from_collection({ 1 })
        :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
          :with_timestamp_assigner(function(v) return v end))
        :key_by(function() return "k" end)
        :window(W.dynamic_event_time_session(function() return g end))
        :process(function(_, _, els, out) out(#els) end)
        :collect()
      raises(function() env:execute() end,
        "the gap must be a whole number of ms in 1..2^51, got " .. require("weir.duration").show(g),
        "record: 1")
    end
  end)
end)

spec.describe("integer options that C takes as int32_t", function()
  it("are build errors beyond their range", function()
    local env = weir.env()
    for _, v in ipairs({ 3e9, 2 ^ 31, INF, 0, 1.5 }) do
      raises(function() env:read_text_file("x", { max_line_bytes = v }) end,
        "time_range_spec.lua:", "read_text_file: max_line_bytes must be an integer from 1 to "
        .. "2147483647, got " .. tostring(v))
      raises(function() env:stdin({ max_line_bytes = v }) end,
        "stdin: max_line_bytes must be an integer from 1 to 2147483647")
    end
    raises(function() weir.env{ parallelism = 40000 } end,
      "weir.env: parallelism must be an integer from 1 to 32768, got 40000")
    raises(function() weir.env{ batch_size = 2 ^ 32 } end,
      "weir.env: batch_size must be an integer from 1 to 1024")
    raises(function() weir.env{ batch_size = 2000 } end,
      "weir.env: batch_size must be an integer from 1 to 1024, got 2000")
    raises(function() weir.env{ batch_size = 0 } end,
      "weir.env: batch_size must be an integer from 1 to 1024, got 0")
    eq(weir.env{ batch_size = 1024 }.batch_size, 1024)
    local s = env:from_elements(1):map(tostring)
    raises(function() s:set_parallelism(2 ^ 31) end,
      "set_parallelism: parallelism must be an integer from 1 to 32768")
    local got = s:collect()
    local lines = env:read_text_file("/dev/null", { max_line_bytes = 2 ^ 31 - 1 }):collect()
    env:execute()
    eq({ got:values(), lines:values() }, { { "1" }, {} })
  end)
end)

spec.finish()
