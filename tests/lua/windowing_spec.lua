-- Specs for weir.windowing, the window layer's face: a window subtask's table gets every field
-- it will have before records flow, on each operator (a field added mid-run can grow the
-- table's hash part, which fails the slot guards of the traces recorded on it: nexmark q5 ran
-- 1.5x slower so). The face's instantiate is wrapped to watch each subtask from then on; the
-- job fires windows (the watermarks), gathers sliced ones, and runs the stall check per record.
local spec = require("spec")
local weir = require("weir")
local windowing = require("weir.windowing")
local status = require("weir.status")
local it, eq = spec.it, spec.eq
local W = weir.windows

local count = {
  create = function() return 0 end,
  add = function(_, acc) return acc + 1 end,
  result = function(acc) return acc end,
  merge = function(a, b) return a + b end,
}

-- Runs records through window assigner with fn ("aggregate" or "process"): the operator chosen
-- and the fields set on a subtask after instantiate ("node.field", sorted).
local function late_fields(assigner, fn)
  local instantiate = windowing.instantiate
  local added, how, job = {}, nil, nil
  windowing.instantiate = function(j, node)
    job = j
    instantiate(j, node)
    how = windowing.choose(j.plan.env, node)
    for _, inst in ipairs(node.instances) do
      setmetatable(inst, { __newindex = function(t, k, v)
        added[#added + 1] = tostring(k)
        rawset(t, k, v)
      end })
    end
  end
  local records = {}
  for i = 1, 400 do
    records[i] = { i % 7, i * 3 }
  end
  local env = weir.env{ parallelism = 1 }
  local s = env:from_collection(records)
    :map(function(e)
      status.check_stalls(job, 30000) -- what a tick runs
      return e
    end)
    :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(5)
      :with_timestamp_assigner(function(e) return e[2] end))
    :key_by(function(e) return e[1] end)
    :window(assigner)
  local out
  if fn == "process" then
    out = s:process(function(key, _, elements, o) o({ key, #elements }) end):collect()
  else
    out = s:aggregate(count):collect()
  end
  local ok, err = pcall(env.execute, env)
  windowing.instantiate = instantiate
  assert(ok, err)
  assert(#out:values() > 0, "the job fired no window")
  table.sort(added)
  return how, added
end

it("tumbling (fast operator): no field added while records flow", function()
  local how, added = late_fields(W.tumbling_event_time(50), "aggregate")
  eq(how, "tumbling")
  eq(added, {})
end)

it("sliced sliding (fast operator): no field added while records flow", function()
  local how, added = late_fields(W.sliding_event_time(60, 20), "aggregate")
  eq(how, "sliced")
  eq(added, {})
end)

it("sessions (general operator): no field added while records flow", function()
  local how, added = late_fields(W.event_time_session(10), "process")
  eq(how, "general")
  eq(added, {})
end)
spec.finish()
