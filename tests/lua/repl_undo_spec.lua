-- Specs for weir.repl_undo: the REPL's steps (a snapshot after each line that changed the job,
-- none after one that did not), the memory bound (the last KEPT steps within BUDGET bytes),
-- the snapshot as a checkpoint's state file that weir.checkpoint_job restores from memory as
-- it does from a path, and the commands' place in :help and completion. The sessions that go
-- back and forward again are tests/repl/undo* and tests/cli/repl_undo.sh.
local spec = require("spec")
local weir = require("weir")
local C = require("weir.ffi")
local checkpoint = require("weir.checkpoint")
local run = require("weir.run")
local session = require("weir.repl_session")
local job_ctl = require("weir.repl_job")
local undo = require("weir.repl_undo")
local cmds = require("weir.repl_commands")
local it, eq = spec.it, spec.eq

local S = session.S

-- A job on the manual source with a rich function's state and collect, started on the virtual
-- clock as the REPL starts one (without its input: the spec pushes records itself).
local function manual_job()
  local env = weir.env()
  env.job = { mode = "run" }
  local out = env:manual()
    :map({ n = 0,
           map = function(self, v) self.n = self.n + 1 return v .. "#" .. self.n end,
           snapshot_state = function(self) return self.n end,
           restore_state = function(self, values) self.n = values[1] end })
    :collect()
  local plan = require("weir.plan").build(env, "spec")
  env.executed = true -- built here, as env:execute() would, and run by the spec
  local job = run.new(plan)
  job:start({ clock = "virtual" })
  S.job, S.plan, S.replays, S.trace, S.last = job, plan, {}, nil, nil
  S.in_job, S.background, S.waited = 0, 0, 0
  for _, node in ipairs(plan.sources) do
    S.manual = node
  end
  undo.started(job, "virtual")
  return job, out
end

local function push(job, text)
  C.weir_manual_push(job.rt, S.manual.src_id, text, #text)
  job_ctl.pump()
end

local function close(job)
  job:close()
  S.job, S.undo = nil, nil
end

it("takes a step after each line that changed the job, and none after one that did not", function()
  local job = manual_job()
  undo.after_line(":start", "start")
  push(job, "a")
  undo.after_line(":push a", "push")
  undo.after_line("1 + 1") -- Lua that changed nothing
  undo.after_line(":status", "status") -- an inspector: not even looked at
  push(job, "b")
  undo.after_line(":push b", "push")
  local steps = S.undo.steps
  eq(#steps, 3)
  eq({ steps[1].label, steps[2].label, steps[3].label }, { ":start", ":push a", ":push b" })
  eq(steps[1].first, true)
  eq(steps[3].now, 0)
  close(job)
end)

it("keeps the last KEPT steps within BUDGET bytes, the oldest going first", function()
  local kept = undo.KEPT
  undo.KEPT = 3
  local job = manual_job()
  for i = 1, 6 do
    push(job, "r" .. i)
    undo.after_line(":push r" .. i, "push")
  end
  eq(#S.undo.steps, 3)
  eq(S.undo.dropped, 3)
  eq(S.undo.steps[1].label, ":push r4")
  local bytes = 0
  for _, s in ipairs(S.undo.steps) do
    bytes = bytes + #s.state
  end
  eq(S.undo.bytes, bytes)
  undo.KEPT = kept
  local budget = undo.BUDGET
  undo.BUDGET = bytes -- room for about three
  push(job, "r7")
  undo.after_line(":push r7", "push")
  eq(#S.undo.steps <= 3 and S.undo.bytes <= undo.BUDGET, true)
  undo.BUDGET = budget
  close(job)
end)

it("a step is a checkpoint's state file, restored from memory as from a path", function()
  local job, out = manual_job()
  push(job, "a")
  push(job, "b")
  undo.after_line(":push b", "push")
  local step = S.undo.steps[1]
  local sections = assert(checkpoint.decode_state(step.state))
  local names = {}
  for _, s in ipairs(sections) do
    names[#names + 1] = s.name
  end
  table.sort(names)
  eq(names, { "job", "op/map-1", "op/sink-collect-1", "op/source-manual-1",
              "sink/sink-collect-1", "source/source-manual-1" })
  local plan = job.plan
  close(job)
  -- the same plan again, from the step: the count and the collected values go on
  local again = run.new(plan)
  local operators = require("weir.checkpoint_job").operators(again)
  again.restore_from = { path = "(memory)", name = "step", quiet = true, sections = sections,
                         manifest = { operators = operators } }
  again:start({ clock = "virtual" })
  S.job = again
  push(again, "c")
  eq(out:values(), { "a#1", "b#2", "c#3" })
  eq(C.weir_source_stat(again.rt, S.manual.src_id, C.WEIR_STAT_RECORDS), 3)
  again:close()
  S.job = nil
end)

it("every command is in :help and offered by completion", function()
  local names = {}
  for _, n in ipairs(cmds.NAMES) do
    names[n] = true
  end
  for name in pairs(cmds.commands) do
    eq(names[":" .. name], true)
    eq(cmds.HELP:find("\n  :" .. name .. "[ \n]") ~= nil, true)
  end
  for _, n in ipairs({ ":undo", ":checkpoint", ":savepoint", ":restore" }) do
    eq(names[n] and cmds.commands[n:sub(2)] ~= nil, true)
  end
end)

spec.finish()
