-- Shared fixtures of the checkpoint specs: a scratch directory, an env whose job runs as
-- `weir run --checkpoint-dir ...` would, a stop as SIGINT's, a directory's newest checkpoint.
local weir = require("weir")
local C = require("weir.ffi")
local checkpoint = require("weir.checkpoint")

local M = {}

---A new empty directory under the system's temporary directory.
function M.tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p " .. p) == 0)
  return p
end

---An env (weir.env(env_opts)) whose job runs with the CLI's options opts
---({ checkpoint_dir = ..., restore = ..., parallelism = ... }).
function M.env_with(opts, env_opts)
  local env = weir.env(env_opts)
  local job = { mode = "run" }
  for k, v in pairs(opts or {}) do
    job[k] = v
  end
  env.job = job
  return env
end

---Stops env's running job as SIGINT does: it drains, then takes the savepoint.
function M.stop_now(env)
  C.weir_rt_stop(env.running_job.rt)
end

---The newest entry of checkpoint.list(dir).
function M.newest(dir)
  local entries = checkpoint.list(dir)
  return entries[#entries]
end

return M
