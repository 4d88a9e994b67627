-- Specs for weir.timeflow's registry of processing-time timers: the earliest due time over
-- every window subtask, refreshed only for the subtasks marked changed, equals a full scan of
-- the C timer services (what the runtime's wakeup is set from before each poll); and the end of
-- input's +inf watermark reaching the operators downstream of a source.
local spec = require("spec")
local ffi = require("ffi")
local C = require("weir.ffi")
local timeflow = require("weir.timeflow")
local windowop = require("weir.windowop")
local it, eq = spec.it, spec.eq

local PROCESSING = tonumber(C.WEIR_TIME_PROCESSING)
local EVENT = tonumber(C.WEIR_TIME_EVENT)
local INF = math.huge

-- A job with the registry's methods and nodes x subtasks window subtasks (C timer services)
-- on the general window operator, read through weir.windowing as the job reads them.
local function fake_job(nodes, subtasks)
  local job = setmetatable({ timer_nodes = {}, ptimers = timeflow.new_registry() },
    { __index = timeflow.methods })
  for n = 1, nodes do
    local node = { instances = {}, window_op = windowop }
    for st = 1, subtasks do
      node.instances[st] = { node = node,
                             timers = ffi.gc(C.weir_timers_new(), C.weir_timers_free) }
    end
    job.timer_nodes[n] = node
  end
  job:make_sweeps()
  return job
end

local function inst(job, n, st)
  return job.timer_nodes[n].instances[st]
end

local function register(i, t, key)
  C.weir_timers_register(i.timers, PROCESSING, t, key or 0, 0, 1)
end

local function delete(i, t, key)
  C.weir_timers_delete(i.timers, PROCESSING, t, key or 0, 0, 1)
end

local function scan(job)
  local due = INF
  for _, node in ipairs(job.timer_nodes) do
    for _, i in ipairs(node.instances) do
      due = math.min(due, C.weir_timers_next(i.timers, PROCESSING))
    end
  end
  return due
end

it("no timers: nothing is due", function()
  local job = fake_job(2, 2)
  eq(job:next_processing_time(), INF)
  job:processing_timers_changed()
  eq(job:next_processing_time(), INF)
end)

it("a subtask marked changed is read again; the others keep their time", function()
  local job = fake_job(2, 2)
  local a, b = inst(job, 1, 1), inst(job, 2, 2)
  register(a, 50)
  job:processing_timers_changed(a)
  eq(job:next_processing_time(), 50)
  register(b, 30)
  job:processing_timers_changed(b)
  eq(job:next_processing_time(), 30)
  delete(b, 30) -- the subtask holding the earliest time gives it up
  job:processing_timers_changed(b)
  eq(job:next_processing_time(), 50)
end)

it("a change not marked is seen only after a change of any subtask (no argument)", function()
  local job = fake_job(1, 3)
  local a = inst(job, 1, 2)
  register(a, 70)
  eq(job:next_processing_time(), INF) -- not marked: the registry reads nothing
  job:processing_timers_changed()
  eq(job:next_processing_time(), 70)
end)

it("event-time timers do not count", function()
  local job = fake_job(1, 1)
  local a = inst(job, 1, 1)
  C.weir_timers_register(a.timers, EVENT, 5, 0, 0, 1)
  register(a, 9)
  job:processing_timers_changed(a)
  eq(job:next_processing_time(), 9)
end)

it("fired timers: the earliest moves to the next pending one", function()
  local job = fake_job(1, 2)
  local a, b = inst(job, 1, 1), inst(job, 1, 2)
  register(a, 10)
  register(a, 40)
  register(b, 25)
  job:processing_timers_changed()
  eq(job:next_processing_time(), 10)
  local tm = ffi.new("weir_timer_t")
  while C.weir_timers_pop(a.timers, PROCESSING, 30, tm) == 1 do end
  job:processing_timers_changed(a)
  eq(job:next_processing_time(), 25)
end)

it("sync_wakeup sets the wakeup only when the earliest time moved", function()
  local job = fake_job(1, 1)
  local a = inst(job, 1, 1)
  local rt = C.weir_rt_new(C.WEIR_CLOCK_VIRTUAL, 0)
  job.rt = rt
  register(a, 12)
  job:processing_timers_changed(a)
  job:sync_wakeup()
  eq(job.wakeup, 12)
  register(a, 90)
  job:processing_timers_changed(a)
  job:sync_wakeup()
  eq(job.wakeup, 12)
  C.weir_rt_free(rt)
end)

it("random registrations and deletions, a few per query: always a full scan's answer", function()
  local job = fake_job(3, 4)
  local all = {}
  for n = 1, 3 do
    for st = 1, 4 do
      all[#all + 1] = inst(job, n, st)
    end
  end
  local seed = 12345
  local function rand(m) -- a small LCG: the same sequence on every run
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % m
  end
  for round = 1, 2000 do
    for _ = 1, 1 + rand(3) do
      local i = all[1 + rand(#all)]
      local t, key = rand(200), rand(3)
      if rand(3) == 0 then
        delete(i, t, key)
      else
        register(i, t, key)
      end
      if rand(10) == 0 then
        job:processing_timers_changed()
      else
        job:processing_timers_changed(i)
      end
    end
    if rand(5) == 0 then -- fire what is due at some time, as Job:fire_processing_timers does
      local upto = rand(200)
      local tm = ffi.new("weir_timer_t")
      for _, i in ipairs(all) do
        while C.weir_timers_pop(i.timers, PROCESSING, upto, tm) == 1 do end
      end
      job:processing_timers_changed()
    end
    local got, want = job:next_processing_time(), scan(job)
    if got ~= want then
      error(("round %d: the registry says %s, a scan %s"):format(round, got, want))
    end
  end
end)


-- The end of input: +inf reaches the operators downstream of a source even when the source had
-- announced IDLE (a Kafka source whose partitions all finished and were released at a tick
-- before its END event: the window after it then never fired its last windows).
local END_EXHAUSTED, END_STOPPED = tonumber(C.WEIR_END_EXHAUSTED), tonumber(C.WEIR_END_STOPPED)

-- A source instance feeding one downstream subtask (a valve of `channels`, the source on
-- channel 0) whose node records the watermarks its valve gives.
local function end_job(channels)
  local seen = {}
  local down = { node = { id = 1, on_watermark = function(_, w) seen[#seen + 1] = w end },
                 valve = ffi.gc(C.weir_valve_new(channels), C.weir_valve_free), wm_targets = {} }
  local src = { wm_targets = { { down, 0 } }, watermark = -INF }
  local job = setmetatable({ live = 1, stopped = false,
                             by_source = { [0] = { instances = { src } } } },
    { __index = timeflow.methods })
  return job, src, down, seen
end

it("end of input: +inf goes down from an active source", function()
  local job, src, down, seen = end_job(1)
  timeflow.forward_watermark(src, 39999)
  job:source_ended(0, END_EXHAUSTED)
  eq(seen, { 39999, INF })
  eq(C.weir_valve_output(down.valve), INF)
  eq(job.live, 0)
end)

it("end of input: a source that announced IDLE becomes ACTIVE first, and +inf goes down", function()
  local job, src, down, seen = end_job(1)
  timeflow.forward_watermark(src, 39999)
  timeflow.forward_status(src, true) -- every partition released: the source's output is idle
  eq(C.weir_valve_is_idle(down.valve), 1)
  job:source_ended(0, END_EXHAUSTED)
  eq(seen, { 39999, INF })
  eq(C.weir_valve_output(down.valve), INF)
  eq(C.weir_valve_is_idle(down.valve), 0)
end)

it("end of input: an idle source sends +inf too; the other inputs hold the output", function()
  local job, src, down, seen = end_job(2)
  C.weir_valve_watermark(down.valve, 1, 500)
  timeflow.forward_status(src, true)
  eq(seen, { 500 }) -- channel 0 left out: channel 1 alone gives the output
  job:source_ended(0, END_EXHAUSTED)
  eq(seen, { 500 })
  eq(C.weir_valve_channel_watermark(down.valve, 0), INF)
end)

it("a stopped source sends no +inf", function()
  local job, src, _, seen = end_job(1)
  timeflow.forward_watermark(src, 7)
  job:source_ended(0, END_STOPPED)
  eq(seen, { 7 })
end)

spec.finish()
