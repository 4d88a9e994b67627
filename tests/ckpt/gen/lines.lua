-- The inputs of the kill loops' jobs (killloop.sh runs the one a job folder's `gen` file names,
-- beside this module): the same bytes every run, from a deterministic LCG.
local M = {}

---A generator of pseudo-random integers in [0, m), from seed.
function M.lcg(seed)
  local x = seed
  return function(m)
    x = (x * 1103515245 + 12345) % 2147483648
    return x % m
  end
end

---Writes n lines to path, line(i) making the i-th (buffered, 4096 lines a write).
function M.write(path, n, first, line)
  local out = assert(io.open(path, "wb"))
  local buf = { first }
  for i = 1, n do
    buf[#buf + 1] = line(i)
    if #buf == 4096 then
      out:write(table.concat(buf, "\n"), "\n")
      buf = {}
    end
  end
  if #buf > 0 then
    out:write(table.concat(buf, "\n"), "\n")
  end
  out:close()
end

---The record count: the generator's argument, else the environment's name, else dflt.
function M.count(env, dflt)
  return tonumber(arg and arg[1]) or tonumber(os.getenv(env)) or dflt
end

return M
