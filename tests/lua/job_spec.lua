-- Specs for building and running jobs: the stream API end to end through the C runtime.
local spec = require("spec")
local weir = require("weir")
local it, eq, raises = spec.it, spec.eq, spec.raises

local function run(build, opts)
  local env = weir.env(opts or { parallelism = 2 })
  local handle = build(env)
  env:execute("spec")
  return handle:values()
end

spec.describe("stateless operators", function()
  it("maps, filters and flat-maps in order", function()
    eq(run(function(env)
      return env:from_collection({ 1, 2, 3, 4 })
        :map(function(n) return n * 10 end)
        :filter(function(n) return n ~= 20 end)
        :flat_map(function(n, out) out(n) out(n + 1) end)
        :collect()
    end, { parallelism = 1 }), { 10, 11, 30, 31, 40, 41 })
  end)
  it("gives process() a context", function()
    eq(run(function(env)
      return env:from_elements("x")
        :process(function(v, ctx, out)
          out({ v, ctx:timestamp() == nil, ctx:current_watermark(),
                type(ctx:current_processing_time()) })
        end)
        :collect()
    end), { { "x", true, -math.huge, "number" } })
  end)
  it("generates values from an index, starting at 0", function()
    eq(run(function(env)
      return env:generate(function(i) return i * i end, { count = 4 }):collect()
    end), { 0, 1, 4, 9 })
  end)
  it("sends everything to a collect sink of parallelism 1", function()
    local got = run(function(env)
      return env:from_collection({ "a", "b", "c", "d" })
        :map(function(w) return w end)
        :collect()
    end, { parallelism = 3 })
    table.sort(got)
    eq(got, { "a", "b", "c", "d" })
  end)
end)

spec.describe("key_by", function()
  local function subtasks(list, p)
    return run(function(env)
      return env:from_collection(list)
        :key_by(function(k) return k end)
        :process({
          open = function(self, rt) self.i = rt:subtask_index() end,
          process = function(self, k, ctx, out) out({ k, self.i, ctx:current_key() == k }) end,
        })
        :collect()
    end, { parallelism = p })
  end
  it("routes string keys as Flink", function()
    eq(subtasks({ "a", "b", "c" }, 2), { { "a", 1, true }, { "b", 0, true }, { "c", 0, true } })
  end)
  it("routes integer keys as Flink", function()
    eq(subtasks({ 0, 4 }, 2), { { 0, 1, true }, { 4, 0, true } })
  end)
  it("routes number keys as Flink through the exchange's memo (misses, collisions)", function()
    -- the hash exchange keeps number keys' subtasks in a memo of 16,384 slots filled with the
    -- keys 0..16,383 (weir.exchange): keys that share a slot, negative, fractional and large
    -- ones, in turn and often enough for the compiled path to see each
    local keys = require("weir.keys")
    local list = {}
    for i = 0, 19999 do
      local r = i % 6
      list[#list + 1] = r == 0 and i or r == 1 and i + 16384 or r == 2 and -i
        or r == 3 and i + 0.5 or r == 4 and 2 ^ 40 + i or i % 7
    end
    list[#list + 1] = -0.0
    list[#list + 1] = 1 / 0
    for _, p in ipairs({ 2, 3 }) do
      local got = subtasks(list, p)
      local bad = {}
      for _, g in ipairs(got) do
        if g[2] ~= keys.subtask(g[1], 128, p) or not g[3] then bad[#bad + 1] = g end
      end
      eq(#got, #list)
      eq(bad, {})
    end
  end)
  it("routes tuple keys", function()
    local got = run(function(env)
      return env:from_collection({ { "a", 1 }, { "a", 1 } })
        :key_by(function(r) return r end)
        :map({
          open = function(self, rt) self.i = rt:subtask_index() end,
          map = function(self) return self.i end,
        })
        :collect()
    end, { parallelism = 4 })
    eq(got[1], got[2])
  end)
  it("fails the job naming a key it cannot hash", function()
    raises(function()
      run(function(env)
        return env:from_elements("x"):key_by(function() return {} end)
          :map(function(v) return v end):collect()
      end)
    end, "cannot hash key")
  end)
end)

spec.describe("job-build errors name the call and the script line", function()
  it("rejects a bad duration", function()
    raises(function() weir.env{ auto_watermark_interval = "5 sec" } end,
      'invalid duration "5 sec"', "job_spec.lua:")
  end)
  it("rejects an unknown option", function()
    raises(function() weir.env{ paralelism = 2 } end, "unknown option 'paralelism'",
      "job_spec.lua:")
  end)
  it("rejects a map without a function", function()
    local env = weir.env()
    raises(function() env:from_elements(1):map(42) end,
      "map: expected a function or a table with a 'map' method", "job_spec.lua:")
  end)
  it("rejects a bad max_retry", function()
    local env = weir.env()
    raises(function() env:socket_text_stream("localhost", 1, { max_retry = -2 }) end,
      "max_retry must be an integer from -1 to 2147483647, got -2")
    raises(function() env:socket_text_stream("localhost", 1, { max_retry = 2 ^ 31 }) end,
      "max_retry must be an integer from -1 to 2147483647, got 2147483648")
  end)
end)

spec.describe("user errors", function()
  it("name the operator, the line and the record", function()
    raises(function()
      run(function(env)
        return env:from_elements("ok", "bad")
          :map(function(v)
            if v == "bad" then error("boom") end
            return v
          end)
          :collect()
      end)
    end, "map (", "job_spec.lua:", "boom", 'record: "bad"')
  end)
  it("route to the on_error side output and go on", function()
    local errors = weir.output_tag("errors")
    local env = weir.env{ on_error = errors }
    local mapped = env:from_collection({ 1, 0, 2 })
      :map(function(n) return assert(n ~= 0 and 10 / n, "zero") end)
    local ok = mapped:collect()
    local bad = mapped:get_side_output(errors):collect()
    env:execute()
    eq(ok:values(), { 10, 5 })
    eq(#bad:values(), 1)
    eq(bad:values()[1].value, 0)
    assert(bad:values()[1].error:find("zero", 1, true))
  end)
end)

-- A generator's driver keeps the record index in its loop, not in a store per record: a failure
-- reads it from the driver's frame (weir.failure), in any batch, through any chain.
spec.describe("generator failures", function()
  it("name the record a generate function failed at", function()
    raises(function()
      run(function(env)
        return env:generate(function(i)
          if i == 700 then error("gen boom") end
          return i
        end, { count = 1000 }):collect()
      end, { parallelism = 1, batch_size = 64 })
    end, "generate (", "gen boom", "record: 700")
  end)
  it("name the record a downstream function failed at", function()
    raises(function()
      run(function(env)
        return env:generate(function(i) return i end, { count = 1000 })
          :map(function(v) return v + 1 end)
          :filter(function(v) if v == 301 then error("filter boom") end return true end)
          :collect()
      end, { parallelism = 1, batch_size = 64 })
    end, "filter (", "filter boom", "record: 301")
  end)
  it("route to on_error and go on from the next record, each record once", function()
    local errors = weir.output_tag("errors")
    local env = weir.env{ on_error = errors, batch_size = 50 }
    local mapped = env:generate(function(i) return i end, { count = 500 })
      :map(function(v) return assert(v % 97 ~= 5 and v, "bad") end)
    local ok = mapped:collect()
    local bad = mapped:get_side_output(errors):map(function(e) return e.value end):collect()
    env:execute()
    local want_ok, want_bad = {}, {}
    for i = 0, 499 do
      if i % 97 == 5 then want_bad[#want_bad + 1] = i else want_ok[#want_ok + 1] = i end
    end
    eq(ok:values(), want_ok)
    eq(bad:values(), want_bad)
  end)
end)

-- A sink fed by a generator through maps only does not count its calls: the output count is
-- its source's batches, less the records a routed failure stopped before the sink
-- (weir.exchange, derive_out_counts).
spec.describe("the output count", function()
  local function outputs(build, opts)
    local env = weir.env(opts)
    local calls = { n = 0 }
    build(env, calls)
    env:execute("spec")
    return env:status().records_out, calls.n
  end
  local function counting_sink(calls)
    return function() calls.n = calls.n + 1 end
  end
  it("is every record delivered through maps, and not those a map failed", function()
    local errors = weir.output_tag("errors")
    local out, calls = outputs(function(env, calls)
      local m = env:generate(function(i) return i end, { count = 1000 })
        :map(function(v) return assert(v % 10 ~= 3 and v, "map") end)
      m:key_by(function(v) return v % 5 end)
        :sink(counting_sink(calls))
      m:get_side_output(errors):sink(function() end)
    end, { on_error = errors, batch_size = 64, parallelism = 2 })
    eq(calls, 900)
    eq(out, 900 + 100, "with the map's 100 error records into the side output's sink")
  end)
  it("counts a failing sink's record, as a sink that counts itself", function()
    local errors = weir.output_tag("errors")
    local out, calls = outputs(function(env, calls)
      local s = env:generate(function(i) return i end, { count = 300 })
        :map(function(v) return v end)
      s:sink(function(v)
        assert(v % 7 ~= 0, "sink")
        calls.n = calls.n + 1
      end)
    end, { on_error = errors, batch_size = 32, parallelism = 1 })
    eq(calls, 300 - 43)
    eq(out, 300)
  end)
  it("counts from_elements into print and a fan-out the usual way", function()
    local out = outputs(function(env)
      local s = env:from_elements(1, 2, 3):map(function(v) return v end)
      s:collect()
      s:filter(function(v) return v > 1 end):collect()
    end, { parallelism = 1 })
    eq(out, 5)
    out = outputs(function(env) env:from_elements("a", "b"):collect() end, { parallelism = 1 })
    eq(out, 2)
  end)
end)

spec.describe("env:status()", function()
  it("reads the env's own running job, and its final status after execute", function()
    local env, other = weir.env(), weir.env()
    local live, foreign = {}, {}
    env:from_collection({ "a", "b", "c" })
      :map(function(v)
        local n = env:status().records_in -- the live job's count: 1 to 3, by batching
        live[#live + 1] = n >= 1 and n <= 3
        foreign[#foreign + 1] = other:status() == nil
        return v
      end)
      :collect()
    eq(env:status(), nil, "before execute")
    env:execute("spec")
    eq(live, { true, true, true }, "records in while the job runs")
    eq(foreign, { true, true, true }, "another env sees no job")
    eq(env:status().records_in, 3, "after execute")
    eq(env.running_job, nil, "the job is gone once it closed")
  end)
  it("after a stop, lists the windows left open as they were, made only when read", function()
    local ffi = require("ffi")
    pcall(ffi.cdef, "int kill(int pid, int sig); int getpid(void);")
    local windowing = require("weir.windowing")
    local env = weir.env{ parallelism = 1 }
    env:generate(function(i)
        if i == 50 then
          ffi.C.kill(ffi.C.getpid(), 15) -- SIGTERM: a stop, the windows stay open
        end
        return { i % 5, i }
      end, { count = 100000 })
      :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
        :with_timestamp_assigner(function(e) return e[2] end))
      :key_by(function(e) return e[1] end)
      :window(weir.windows.tumbling_event_time(1000000))
      :process(function(_, _, els, out) out(#els) end)
      :collect()
    local listed, list = 0, windowing.windows
    windowing.windows = function(...)
      listed = listed + 1
      return list(...)
    end
    local ok, err = pcall(env.execute, env, "spec")
    local at_end = listed
    local s = ok and env:status()
    local again = ok and env:status()
    windowing.windows = list
    assert(ok, err)
    eq(at_end, 0, "the end of the job lists no window")
    eq(listed, 1, "the first env:status() lists the window subtask's windows, once")
    eq(again == s, true, "later calls return the same table")
    local sub
    for _, op in ipairs(s.operators) do
      if op.label:match("^window") then
        sub = op.subtasks[1]
      end
    end
    eq(sub.open_windows, 5, "five keys' windows open")
    eq(#sub.windows, 5, "all five listed")
    local n = 0
    for _, w in ipairs(sub.windows) do
      n = n + w.elements
      eq(w.waits_for, 999999, "each waits for the watermark to pass its end")
      eq(w.status, "open", "still open")
    end
    eq(n, s.records_in, "they hold every record read before the stop")
  end)
end)

spec.describe("jobs one after another", function()
  -- a trace keeps what it was specialised on alive, and an environment the script made stays
  -- in weir run's list of them: neither may keep a finished job's graph and window state
  it("keep nothing of the jobs before them", function()
    local function job()
      local elements = {}
      for i = 1, 2000 do
        elements[i] = { i % 40, i }
      end
      local env = weir.env{ parallelism = 1 }
      env:from_collection(elements)
        :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
          :with_timestamp_assigner(function(e) return e[2] end))
        :key_by(function(e) return e[1] end)
        :window(weir.windows.tumbling_event_time("50ms"))
        :reduce(function(a, b) return { a[1], a[2] + b[2] } end)
        :sink({ sink = function() end })
      env:execute("spec")
    end
    local function heap()
      collectgarbage()
      collectgarbage()
      return collectgarbage("count")
    end
    for _ = 1, 5 do
      job()
    end
    local before = heap()
    for _ = 1, 20 do
      job()
    end
    local grown = heap() - before
    -- a job's graph, traces and state are ~250 KB; what stays must be far below one job's
    eq(grown < 100, true, ("the heap grew %.0f KB over 20 jobs"):format(grown))
  end)
end)

spec.finish()
