-- Wrapper of bench/checkpoint's throughput runs: runs a benchmark job (its file, then its
-- arguments) and then writes to stderr the job process's own CPU time and page faults
-- (getrusage of the process, its writer processes not included) and, when it checkpointed,
-- env:metrics().checkpoints, as two lines "self name=value ..." and "checkpoints name=value ...".
--
--   weir run [--checkpoint-dir DIR ...] bench/ckpt_metrics.lua -- JOB.lua ARGS...
local ffi = require("ffi")
local weir = require("weir")

ffi.cdef [[
struct bench_timeval { long tv_sec; long tv_usec; };
struct bench_rusage {
  struct bench_timeval ru_utime, ru_stime;
  long ru_maxrss, ru_ixrss, ru_idrss, ru_isrss, ru_minflt, ru_majflt, ru_nswap, ru_inblock,
       ru_oublock, ru_msgsnd, ru_msgrcv, ru_nsignals, ru_nvcsw, ru_nivcsw;
};
int getrusage(int who, struct bench_rusage *usage);
]]

local job = table.remove(weir.args, 1)
if not job then
  error("bench/ckpt_metrics.lua: expected a job file and its arguments")
end
local envs, env_of = {}, weir.env
weir.env = function(...)
  local e = env_of(...)
  envs[#envs + 1] = e
  return e
end
dofile(job)
weir.env = env_of

local ru = ffi.new("struct bench_rusage")
ffi.C.getrusage(0, ru) -- RUSAGE_SELF
local function ms(tv)
  return tonumber(tv.tv_sec) * 1e3 + tonumber(tv.tv_usec) / 1e3
end
io.stderr:write(("self user_ms=%.3f sys_ms=%.3f minflt=%d\n"):format(ms(ru.ru_utime),
  ms(ru.ru_stime), tonumber(ru.ru_minflt)))
local c = envs[1] and envs[1]:metrics() and envs[1]:metrics().checkpoints
if c then
  local names = {}
  for k in pairs(c) do
    names[#names + 1] = k
  end
  table.sort(names)
  local parts = {}
  for _, k in ipairs(names) do
    parts[#parts + 1] = ("%s=%s"):format(k, tostring(c[k]))
  end
  io.stderr:write("checkpoints ", table.concat(parts, " "), "\n")
end
