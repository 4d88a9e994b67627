-- Specs for the REPL's inspectors (weir.inspect): what `:why` promises each window waits for is
-- checked against the operator's real future. Random jobs (tumbling, sliding, sessions, a
-- global window with a count trigger; both operators; allowed lateness) run on random records
-- with watermark marks; at a random record the spec takes `:why`'s promises, then lets the job
-- go on and checks each one:
--   "waits for the watermark to reach T": the window fires first at the first watermark >= T
--     (the end of input's +inf when none comes), unless a later element of its key grows it
--     (sessions);
--   "fired; kept for late records until the watermark reaches T": it stays listed while the
--     watermark is below T and is gone once it reaches T;
--   "waits for a count of N (n so far)": it fires with the (N - n)-th next element of its key.
local spec = require("spec")
local weir = require("weir")
local inspect = require("weir.inspect")
local windowing = require("weir.windowing")
local winjob = require("lib.winjob")
local it, eq = spec.it, spec.eq
local W = weir.windows
local INF = math.huge

local CASES = {
  { name = "tumbling with lateness", assigner = function() return W.tumbling_event_time(10) end,
    lateness = 12 },
  { name = "tumbling, general", assigner = function() return W.tumbling_event_time(10, 4) end,
    lateness = 6, fast = false },
  { name = "sliding with lateness", assigner = function() return W.sliding_event_time(20, 10) end,
    lateness = 9 },
  { name = "sessions", assigner = function() return W.event_time_session(6) end, lateness = 4,
    process = true, merging = true },
  { name = "global window, count trigger", assigner = function() return W.global() end,
    trigger = function() return weir.triggers.count(3) end, process = true },
  { name = "global window, purging count trigger", assigner = function() return W.global() end,
    trigger = function() return weir.triggers.purging(weir.triggers.count(2)) end,
    process = true },
}

local function wid(key, w)
  return tostring(key) .. " " .. tostring(w)
end

-- One job: the promises at record `at`, then per record the watermark and the windows listed,
-- and the fires { id, watermark, elements of the key since the snapshot }.
local function run(case, records, at)
  local watch = winjob.watch()
  local promises, samples, fires, after = nil, {}, {}, {}
  local seen = 0
  local node
  local function look(e)
    seen = seen + 1
    node = node or watch.nodes[#watch.nodes].node
    local job = watch.nodes[#watch.nodes].job
    if seen == at then
      promises = inspect.promises(job)
    end
    if promises then
      local inst = node.instances[1]
      local listed = {}
      for _, w in ipairs(windowing.windows(node, inst)) do
        listed[wid(w.key, w.window)] = true
      end
      samples[#samples + 1] = { watermark = inst.watermark, listed = listed }
      if e[1] ~= nil then
        after[e[1]] = (after[e[1]] or 0) + 1
      end
    end
  end
  local function fired(key, ctx)
    if promises then
      fires[#fires + 1] = { id = wid(key, ctx:window()), watermark = ctx:current_watermark(),
                            after = after[key] or 0 }
    end
  end
  local configure = function(w)
    if case.process then
      return w:process(function(key, ctx, _, out)
        fired(key, ctx)
        out(1)
      end)
    end
    return w:aggregate(winjob.count_sum, function(key, ctx, _, out)
      fired(key, ctx)
      out(1)
    end)
  end
  winjob.run(records, case.assigner(), configure, {
    env = { parallelism = 1 }, lateness = case.lateness, fast = case.fast,
    trigger = case.trigger and case.trigger(), each = look,
  })
  watch.stop()
  return promises or {}, samples, fires
end

local function check_promise(case, p, records, at, samples, fires)
  local id = wid(p.key, p.window)
  local first
  for _, f in ipairs(fires) do
    if f.id == id then
      first = f
      break
    end
  end
  local x = p.waits
  if x.what == "watermark" then
    eq(p.text:find("waits for the watermark to reach " .. tostring(x.time), 1, true) ~= nil, true)
    local want = INF
    local grows = false
    for i = at, #records do
      local r = records[i]
      if r.wm and r.wm >= x.time then
        want = r.wm
        break
      end
      grows = grows or (case.merging and r[1] == p.key)
    end
    if grows then
      return 0 -- a later element of the key may merge the session: no promise about it
    end
    assert(first, ("%s: promised to fire at watermark %s, never fired"):format(id,
      tostring(x.time)))
    eq(first.watermark, want)
  elseif x.what == "cleanup" then
    eq(p.fired, true)
    eq(p.text:find("kept for late records until the watermark reaches " .. tostring(x.time), 1,
      true) ~= nil, true)
    for j, s in ipairs(samples) do -- samples[j]: before records[at + j - 1]
      eq(s.listed[id] == true, s.watermark < x.time)
      if case.merging and records[at + j - 1][1] == p.key then
        break -- the next element of the key may merge the session
      end
    end
  elseif x.what == "count" then
    eq(p.text:find(("waits for a count of %d element(s) (%d so far)"):format(x.count, x.have),
      1, true) ~= nil, true)
    local more = 0
    for i = at, #records do
      if records[i][1] == p.key then more = more + 1 end
    end
    if more < x.count - x.have then
      assert(not first, id .. " fired before its count")
      return 1
    end
    assert(first, id .. ": never fired")
    eq(first.after, x.count - x.have)
  else
    error("unexpected promise: " .. p.text)
  end
  return 1
end

for _, case in ipairs(CASES) do
  it(case.name .. ": 80 random jobs keep what :why promised", function()
    math.randomseed(5)
    local checked, kinds = 0, {}
    for _ = 1, 80 do
      local records = winjob.random_records(math.random(1, 50), { "a", "b", 3 })
      local at = math.random(1, #records)
      local promises, samples, fires = run(case, records, at)
      for _, p in ipairs(promises) do
        checked = checked + check_promise(case, p, records, at, samples, fires)
        kinds[p.waits.what] = true
      end
    end
    assert(checked > 60, "checked only " .. checked)
    if case.trigger then
      eq(kinds, { count = true })
    elseif case.lateness then
      eq(kinds, { watermark = true, cleanup = true })
    end
  end)
end

-- :draw on random jobs, at random records and at the end: every line fits the width, no nan
-- and no "+inf .. +inf", the watermark is the vertical line when it is a time, and each window
-- is drawn once, saying how many times it fired.
local function draw_lines(job, cols)
  local lines = {}
  inspect.draw(job, job.trace, false, function(t) lines[#lines + 1] = t end, cols)
  return lines
end

local function check_drawing(job, lines, cols)
  local fires = {}
  for _, f in ipairs(job.trace.fired) do
    if f.what == "fired" then
      local id = tostring(f.key) .. " " .. tostring(f.start) .. " " .. tostring(f.stop)
      fires[id] = (fires[id] or 0) + 1
    end
  end
  local seen, key = {}, nil
  local wm = job.timer_nodes[1].instances[1].watermark
  local marked
  for _, l in ipairs(lines) do
    marked = marked or l:find("(the | line)", 1, true)
  end
  if lines[1]:find("^processing time") then
    wm = require("weir.status").now(job) -- on a processing-time axis the line is the clock
  end
  eq(marked ~= nil, wm > -INF and wm < INF)
  for _, l in ipairs(lines) do
    assert(#l <= cols, ("%d columns: %q"):format(#l, l))
    assert(not l:find("nan") and not l:find("inf .. +inf", 1, true), l)
    local k = l:match("^(%S+)%s")
    if k and not l:find("^event time") and not l:find("^processing time")
        and not l:find("^watermark") and not l:find("^now") and not l:find("^to ")
        and not l:find("^one column") then
      key = k
    end
    local s0, e0 = l:match("%[(%-?%d+), (%-?%d+)%)$")
    if s0 and l:find("^%s") then
      local id = key .. " " .. s0 .. " " .. e0
      assert(not seen[id], "drawn twice: " .. id)
      seen[id] = true
      local n = tonumber(l:match("fired (%d+)x") or (l:find("fired") and 1) or 0)
      eq(n, fires[id] or 0)
    end
  end
end

for _, case in ipairs(CASES) do
  it(case.name .. ": :draw fits, draws the watermark, each window once", function()
    math.randomseed(9)
    for _ = 1, 30 do
      local records = winjob.random_records(math.random(1, 40), { "a", "b", 3 })
      local at = math.random(1, #records)
      local cols = ({ 60, 80, 132 })[math.random(1, 3)]
      local watch = winjob.watch(true)
      local seen = 0
      local job
      winjob.run(records, case.assigner(), function(w)
        return w:process(function(_, _, _, out) out(1) end)
      end, { env = { parallelism = 1 }, lateness = case.lateness, fast = case.fast,
             trigger = case.trigger and case.trigger(),
             each = function()
               seen = seen + 1
               job = watch.nodes[1].job
               if seen == at and #job.trace.keys > 0 then
                 check_drawing(job, draw_lines(job, cols), cols)
               end
             end })
      watch.stop()
      if #job.trace.keys > 0 then
        check_drawing(job, draw_lines(job, cols), cols)
      end
    end
  end)
end

it("the inspectors read a job that has ended (its final state)", function()
  for _, assigner in ipairs({ W.tumbling_event_time(10), W.tumbling_processing_time(10),
                              W.event_time_session(5) }) do
    local watch = winjob.watch(true)
    winjob.run({ { "a", 1, 1 }, { wm = 3 }, { "b", 2, 1 } }, assigner, nil,
      { lateness = assigner.is_event_time and 100 or nil })
    watch.stop()
    local job, lines = watch.nodes[1].job, {}
    local say = function(t) lines[#lines + 1] = t end
    inspect.status(job, say)
    inspect.windows(job, nil, say)
    inspect.timers(job, say)
    inspect.why(job, say)
    inspect.draw(job, job.trace, false, say)
    local text = table.concat(lines, "\n")
    assert(text:find("fired") and not text:find("nan"), text)
  end
end)

spec.finish()
