-- Helpers for the bad-input cases: inputs are made when the case runs, so the repository holds
-- no large or binary files.
local M = {}

local made = {}

---Writes bytes to a new temporary file and returns its path (removed by M.cleanup).
function M.file(bytes)
  local path = os.tmpname()
  local fh = assert(io.open(path, "wb"))
  assert(fh:write(bytes))
  assert(fh:close())
  made[#made + 1] = path
  return path
end

---n pseudo-random bytes from a fixed seed (the same bytes on every run and machine).
function M.bytes(n, seed)
  local x = seed or 12345
  local t = {}
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648
    t[i] = string.char(math.floor(x / 65536) % 256)
  end
  return table.concat(t)
end

---The records read_text_file delivers for these bytes: lines cut at "\n", a last line
---without "\n" counts, an empty tail after the last "\n" does not.
function M.lines(bytes)
  local _, n = bytes:gsub("\n", "")
  if #bytes > 0 and bytes:sub(-1) ~= "\n" then
    n = n + 1
  end
  return n
end

function M.cleanup()
  for _, path in ipairs(made) do
    os.remove(path)
  end
  made = {}
end

return M
