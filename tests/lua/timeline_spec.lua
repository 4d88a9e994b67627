-- Specs for weir.param (job parameters), weir.timeline (the recorder behind `weir timeline` and
-- `:draw --svg`) and weir.sweep's pure parts (settings, output diff). The recorder runs a job
-- on a replay, so every processing time below is the replay's virtual clock.
local spec = require("spec")
local weir = require("weir")
local param = require("weir.param")
local timeline = require("weir.timeline")
local sweep = require("weir.sweep")
local run = require("weir.run")
local plan_of = require("weir.plan").build
local it, eq, raises = spec.it, spec.eq, spec.raises

spec.describe("weir.param", function()
  it("reads a given value in its default's type, else the default", function()
    eq(param.set({ "lateness=2s", "n=7", "name=x", "on=false", "raw=1m" }), nil)
    eq(weir.param("lateness", 0), 2000)
    eq(weir.param("n", 1), 7)
    eq(weir.param("name", "y"), "x")
    eq(weir.param("on", true), false)
    eq(weir.param("raw"), "1m")
    eq(weir.param("missing", "3s"), "3s")
    eq(param.unread(), {})
  end)
  it("names what was wrong", function()
    eq(param.set({ "a=1", "a=2" }), "--param a=2: a is given twice")
    eq(param.set({ "novalue" }), "--param novalue: expected NAME=VALUE (e.g. out_of_orderness=2s)")
    eq(param.set({ "x=abc" }), nil)
    raises(function() weir.param("x", 0) end, "timeline_spec.lua", "weir.param(\"x\")",
      "--param x=abc is not a number or a duration")
    raises(function() weir.param("x", false) end, "must be true or false")
    raises(function() weir.param("x", {}) end, "the default must be a number, string or boolean")
    raises(function() weir.param(3, 0) end, "the name must be a string")
  end)
  it("a parameter never read is a usage error (a warning in the REPL)", function()
    param.set({ "used=1", "typo=2", "other=3" })
    weir.param("used", 0)
    eq(param.unread(), { "typo", "other" })
    local ok, err = pcall(param.check, "run")
    eq(ok, false)
    eq(err.usage, true)
    eq(err.msg, "--param typo=2: the job never reads it (nor other) with weir.param (it reads: "
      .. "used)")
    param.check("run") -- once per run
  end)
  param.set({})
end)

-- A replay: one line a second (a,TS records), then the end.
local function replay_file(lines)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  return path
end

local function record(build, lines)
  local path = replay_file(lines)
  local env = weir.env{ parallelism = 1 }
  build(env:replay(path)
    :map(function(line)
      local key, ts = line:match("^(%w+),(%d+)$")
      return { key, tonumber(ts) }
    end)
    :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(0)
      :with_timestamp_assigner(function(e) return e[2] end)
      :with_idleness("3s"))
    :key_by(function(e) return e[1] end))
  env.executed = true
  local job = run.new(plan_of(env))
  job.trace = timeline.new_trace()
  job:start()
  local rec = timeline.attach(job)
  job:run_loop()
  job:finish()
  local d = timeline.snapshot(rec, { script = "spec" })
  job:close()
  os.remove(path)
  return d
end

local function fires_text(d)
  local out = {}
  for _, f in ipairs(d.fires) do
    out[#out + 1] = ("%s [%d,%d) %s @%d"):format(d.keys[f.key], f.start, f.stop, f.kind, f.at)
  end
  return out
end

spec.describe("weir.timeline", function()
  -- tumbling 10 ms, lateness 5 ms; ticks every 200 ms: a record at T moves the watermark at
  -- the next tick, T + 200
  local LINES = {
    "a,1",          -- 0 ms
    "+1s a,12",     -- 1000: watermark 11 at 1200 fires [0,10) on time
    "+1s a,3",      -- 2000: late but within the lateness: [0,10) fires again (late)
    "+1s a,30",     -- 3000: watermark 29 at 3200 fires [10,20), cleans [0,10)
    "+1s a,4",      -- 4000: every window of it is late: dropped
    "+1s b,31",     -- 5000
  }
  local d = record(function(s)
    s:window(weir.windows.tumbling_event_time(10)):allowed_lateness(5)
      :reduce(function(x) return x end):sink(function() end)
  end, LINES)

  it("stamps each fire with its processing time and what caused it", function()
    eq(fires_text(d), {
      "a [0,10) on time @1200",
      "a [0,10) late @2000",
      "a [10,20) on time @3200",
      "a [30,40) on time @5000", -- the end of input: the final watermark, at the last line
      "b [30,40) on time @5000",
    })
  end)
  it("keeps every element with its arrival, and the late record dropped", function()
    local els = {}
    for _, e in ipairs(d.elements) do
      els[#els + 1] = ("%s %d @%d"):format(d.keys[e.key], e.ts, e.at)
    end
    eq(els, { "a 1 @0", "a 12 @1000", "a 3 @2000", "a 30 @3000", "b 31 @5000" })
    eq(#d.late, 1)
    eq({ d.late[1].ts, d.late[1].at, d.late[1].watermark }, { 4, 4000, 29 })
    eq(d.late_dropped, 1)
    eq(d.records_in, 6)
  end)
  it("logs the watermark of each window operator as it moves, in processing time", function()
    local prev_at, prev_w = -math.huge, -math.huge
    for _, w in ipairs(d.watermarks) do
      assert(w.at >= prev_at and w.w > prev_w, "the watermark log goes forward")
      prev_at, prev_w = w.at, w.w
    end
    eq({ d.watermarks[1].at, d.watermarks[1].w }, { 200, 0 })
    eq(d.watermarks[#d.watermarks].w, math.huge)
  end)
  it("records idle inputs as periods of processing time", function()
    -- records at 0..5000 with 1 s between them: never 3 s quiet, so never idle
    eq(#d.idle, 0)
    local q = record(function(s)
      s:window(weir.windows.tumbling_event_time(10)):reduce(function(x) return x end)
        :sink(function() end)
    end, { "a,1", "+5s a,2", "+1s" })
    eq(#q.idle, 1)
    local p = q.idle[1]
    assert(p.from >= 3000 and p.from <= 4000, "idle after 3 s quiet: " .. p.from)
    eq(p.to, 5200) -- active again when its next watermark goes out: the tick after the record
  end)
  it("tells early fires (a trigger before the window's end) and purges apart", function()
    local e = record(function(s)
      s:window(weir.windows.tumbling_event_time(100))
        :trigger(weir.triggers.purging(weir.triggers.count(2)))
        :reduce(function(x) return x end):sink(function() end)
    end, { "a,1", "+1s a,2", "+1s a,3" })
    local kinds = {}
    for _, f in ipairs(e.fires) do
      kinds[#kinds + 1] = f.kind .. " @" .. f.at
    end
    eq(kinds, { "early @1000", "purged @1000" })
  end)
  it("writes data that reads back the same, and a deterministic picture", function()
    local path = os.tmpname()
    assert(timeline.write_file(path, timeline.data_text(d)))
    local back = assert(timeline.read_data(path))
    os.remove(path)
    eq(back, d)
    local svg = timeline.svg(d)
    eq(svg, timeline.svg(back))
    assert(svg:match('^<svg xmlns="http://www.w3.org/2000/svg" width="960" height="%d+"'),
      "an SVG of width 960")
    assert(svg:find("late fire (allowed lateness)", 1, true), "the legend")
    assert(not svg:find("nan", 1, true) and not svg:find("inf\"", 1, true), "no nan or inf")
  end)
  it("formats durations shortly", function()
    eq({ timeline.ms_text(0), timeline.ms_text(250), timeline.ms_text(1500),
         timeline.ms_text(60000), timeline.ms_text(90000), timeline.ms_text(5400000),
         timeline.ms_text(-2000) },
       { "0", "250ms", "1.5s", "1m", "1m30s", "1h30m", "-2s" })
  end)
end)

spec.describe("weir.sweep", function()
  it("makes every combination, the first parameter slowest", function()
    local axes = assert(sweep.axes({ "l=0,1s", "o=0,2s,5s" }))
    local labels = {}
    for _, s in ipairs(sweep.settings(axes)) do
      labels[#labels + 1] = table.concat(s, " ")
    end
    eq(labels, { "l=0 o=0", "l=0 o=2s", "l=0 o=5s", "l=1s o=0", "l=1s o=2s", "l=1s o=5s" })
  end)
  it("names a malformed list", function()
    local _, why = sweep.axes({ "l=0,,1s" })
    eq(why, "--param l=0,,1s: an empty value in the list (values are separated by commas)")
    _, why = sweep.axes({ "l=0", "l=1" })
    eq(why, "--param l=1: l is given twice (give its values as one list: l=A,B)")
  end)
end)

spec.finish()
