-- weir.explain: the job graph as text (`weir explain JOB.lua`).
-- Set-up and report code, run once per job (or per status request): never traced, so that a
-- one-off loop LuaJIT's shared hot counters make look hot cannot abort a trace (weir.codegen).
jit.off(true, true)
local windowing = require("weir.windowing")

local M = {}

local PARTITION = { forward = "forward", rebalance = "rebalance (round-robin from subtask 0)",
                    hash = "hash (key groups)" }

---@param plan table from weir.plan.build
---@return string
function M.text(plan)
  local env = plan.env
  local out = {}
  out[#out + 1] = ("job %q: %d operators, default parallelism %d%s"):format(plan.job_name,
    #plan.nodes, env.parallelism,
    env.max_parallelism and (", max parallelism " .. env.max_parallelism) or "")
  for _, n in ipairs(plan.nodes) do
    local label = n.label
    if n.kind == "source" and not n.name and n.callsite then
      label = ("%s (%s)"):format(label, n.callsite) -- every operator shows its script line
    end
    local line = ("%3d  %s  [parallelism %d%s]"):format(n.id, label, n.parallelism,
      n.max_parallelism and (n.inputs[1] and n.inputs[1].mode == "hash")
        and (", max parallelism " .. n.max_parallelism) or "")
    if n.replaced then
      line = line .. ("  (replaces %s)"):format(n.replaced)
    end
    if n.kind == "window" then
      -- which window operator runs it (docs/API.md, Windows: how weir runs a window), from
      -- the node's shape: no user code runs
      local how = windowing.choose(env, n)
      line = line .. (how == "general" and "  {general window operator}"
        or ("  {fast window operator: %s}"):format(how))
    end
    out[#out + 1] = line
    for _, p in ipairs(n.inputs) do
      local from = p.tag and ("side output '%s' of %d"):format(p.tag.id, p.node.id)
        or tostring(p.node.id)
      out[#out + 1] = ("       <- %s via %s%s"):format(from, PARTITION[p.mode],
        n.chained and ", chained" or "")
    end
  end
  return table.concat(out, "\n") .. "\n"
end

return M
