-- Specs for weir.timeflow's registry of processing-time timers: the earliest due time over
-- every window subtask, refreshed only for the subtasks marked changed, equals a full scan of
-- the C timer services (what the runtime's wakeup is set from before each poll).
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

spec.finish()
