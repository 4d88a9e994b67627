-- weir.roundtrip: `weir run JOB --verify-checkpoints`. After every batch (the consistent point:
-- nothing is in flight) it snapshots every part of the job's checkpoint registry
-- (weir.checkpoint_parts), encodes the sections as a state file would hold them, decodes the
-- bytes, throws the operators' state away (the window parts' reset: fresh window state; a rich
-- function with snapshot_state and restore_state is rebuilt from its table) and restores every
-- part from the decoded sections, then the job goes on. A job whose state survives a restore
-- gives the same output as without the option; one that does not (a field restore_state
-- forgets, state a checkpoint cannot keep) shows it at once. The runtime's own parts (the
-- clock, the sources' positions) are encoded and decoded too but not restored: the running
-- runtime keeps them (a restore sets them before the start).
local checkpoint = require("weir.checkpoint")
local parts = require("weir.checkpoint_parts")
local failure = require("weir.failure")
local util = require("weir.util")

local M = {}
local RT = {}
RT.__index = RT

---The round trip of a started job (after its instantiate and open()).
function M.new(job)
  if not job.checkpointer then
    require("weir.checkpoint_job").assign_uids(job.plan) -- the parts' names
  end
  job.batch = 1 -- a batch per event: a round trip between any two events
  local ck = { job = job, restored_sources = {}, shift_ms = 0 }
  return setmetatable({ job = job, registry = parts.registry(ck), batches = 0 }, RT)
end

-- A rich function with both hooks is rebuilt from its table, in place (the operator's closures
-- hold the object), before restore_state gets its value back; one without keeps its object,
-- as a job without hooks keeps nothing in a checkpoint (docs/API.md, Checkpoints).
local function rebuild_objects(job)
  for _, node in ipairs(job.plan.nodes) do
    if node.rich and node.kind ~= "keyed_process" and type(node.fn) == "table"
        and type(node.fn.snapshot_state) == "function"
        and type(node.fn.restore_state) == "function" then
      for _, inst in ipairs(node.instances) do
        local obj = inst.obj
        if obj then
          for k in pairs(obj) do
            obj[k] = nil
          end
          for k, v in pairs(util.copy(node.fn)) do
            obj[k] = v
          end
        end
      end
    end
  end
end

---After a batch: snapshot, encode, decode, throw away, restore.
function RT:after_batch()
  local reg = self.registry
  self.batches = self.batches + 1
  local ok, sections = pcall(reg.snapshot, reg)
  if not ok then
    failure.job_error(("--verify-checkpoints, after batch %d: %s"):format(self.batches,
      type(sections) == "table" and sections.text or tostring(sections)))
  end
  local eok, bytes = pcall(checkpoint.encode_state, 0, sections)
  if not eok then
    failure.job_error(("--verify-checkpoints, after batch %d: %s"):format(self.batches,
      tostring(bytes)))
  end
  local back, why = checkpoint.decode_state(bytes, 0)
  if not back then
    failure.job_error(("--verify-checkpoints, after batch %d: the state does not decode: %s")
      :format(self.batches, why))
  end
  for _, part in ipairs(reg.parts) do
    if part.reset then
      part.reset()
    end
  end
  rebuild_objects(self.job)
  local restore = {}
  for _, s in ipairs(back) do
    if s.name ~= "job" and not s.name:match("^source/") then
      restore[#restore + 1] = s
    end
  end
  reg:restore(restore)
end

return M
