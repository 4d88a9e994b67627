-- Specs for weir.checkpoint_parts: what a savepoint holds of each part of a real job, section
-- by section (the job's counters, the source's position, each operator's subtasks with a rich
-- function's snapshot_state, the rebalance counters, collect's values, write_text's committed
-- lengths), and that sink(fn) keeps nothing. The round trip through a restore is
-- checkpoint_job_spec's.
local spec = require("spec")
local tmpdir = require("lib.ckjob").tmpdir
local weir = require("weir")
local C = require("weir.ffi")
local checkpoint = require("weir.checkpoint")
local it, eq = spec.it, spec.eq

-- Runs build(env, stop) as `weir run --checkpoint-dir dir` would, stopping (as SIGINT) where
-- the job calls stop(); returns the savepoint's sections by name and the job's result.
local function savepoint_of(build)
  local dir = tmpdir()
  local env = weir.env()
  env.job = { mode = "run", checkpoint_dir = dir }
  local result = build(env, function() C.weir_rt_stop(env.running_job.rt) end)
  env:execute()
  local entries = checkpoint.list(dir)
  local sp = entries[#entries]
  eq(sp.savepoint, true)
  local man, sections = checkpoint.read(sp.path)
  assert(man, sections)
  local by_name, names = {}, {}
  for _, s in ipairs(sections) do
    by_name[s.name] = s.value
    names[#names + 1] = s.name
  end
  table.sort(names)
  os.execute("rm -rf " .. dir)
  return by_name, names, result
end

it("a savepoint holds every part of the job, named by uid, as the job stood", function()
  local out
  local parts, names = savepoint_of(function(env, stop)
    out = env:generate(function(i)
      if i == 1200 then
        stop()
      end
      return i
    end, { count = 5000 })
      :map({ n = 0,
             map = function(self, i) self.n = self.n + 1 return i end,
             snapshot_state = function(self) return self.n end,
             restore_state = function(self, values) self.n = values[1] end }):uid("counter")
      :rebalance():map(function(v) return v end):set_parallelism(2):uid("tag")
      :collect():uid("out")
  end)
  eq(names, { "job", "op/counter", "op/out", "op/source-generate-1", "op/tag",
              "rebalance/counter/tag", "rebalance/tag/out", "sink/out",
              "source/source-generate-1" })
  local values = out:values()
  local n = #values
  assert(n >= 1200 and n < 5000, "the stop came between the start and the end")
  eq(parts.job.records_in, n)
  eq(#parts.job.clock, 3)
  local src = parts["source/source-generate-1"]
  eq(src.kind, "generate")
  eq(src.position.records, n)
  local counter = parts["op/counter"]
  eq(counter.parallelism, 1)
  eq(counter.subtasks[1].has_user, true)
  eq(counter.subtasks[1].user, n) -- the rich function's snapshot_state
  local tag = parts["op/tag"]
  eq(#tag.subtasks, 2)
  eq(tag.subtasks[1].has_user, nil) -- a plain function keeps nothing of its own
  eq(parts["op/out"].channels, 2)
  eq(#parts["rebalance/counter/tag"], 1) -- one counter per upstream subtask
  eq(#parts["rebalance/tag/out"], 2)
  eq(parts["sink/out"].values, values)
end)

it("write_text keeps its files' committed lengths; sink(fn) keeps nothing", function()
  local dir = tmpdir()
  local path = dir .. "/out.txt"
  local parts, names = savepoint_of(function(env, stop)
    local s = env:generate(function(i)
      if i == 1500 then
        stop()
      end
      return i
    end, { count = 5000 })
    s:write_text(path):uid("file")
    s:sink(function() end):uid("screen")
  end)
  local fh = assert(io.open(path, "rb"))
  local size = fh:seek("end")
  fh:close()
  os.execute("rm -rf " .. dir)
  eq(parts["sink/file"].files, { { path = path, length = size } })
  assert(size > 0, "the file has what was written before the stop")
  eq(parts["sink/screen"], nil)
  eq(parts["op/screen"] ~= nil, true) -- its operator part is there all the same
  eq(#names, 6) -- job, source, op/source, op/file, op/screen, sink/file
end)
spec.finish()
