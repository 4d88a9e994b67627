-- weir.csv: CSV rows (RFC 4180, cut by runtime/csv.c) into Lua tables: a sequence of strings,
-- or with a header a table keyed by the header's names.
local ffi = require("ffi")
local C = require("weir.ffi")
local tnew = require("table.new")

local M = {}

local ffi_string = ffi.string

---A decoder of CSV lines cut at sep (one byte): decode(ptr, len) gives true and the row, false
---for the header line (header: the first line decoded names the columns), or nil and the
---message. The GC frees it.
---@return function
function M.decoder(sep, header)
  local c = ffi.gc(C.weir_csv_new(sep:byte()), C.weir_csv_free)
  local n_ptr = ffi.new("int32_t[1]")
  local names -- the header's
  local pending, failed = header, false
  local function field(i)
    local p = C.weir_csv_get(c, i, n_ptr)
    return ffi_string(p, n_ptr[0])
  end
  return function(ptr, len)
    local n = C.weir_csv_split(c, ptr, len)
    if pending then
      pending = false
      failed = true
      if n < 0 then
        return nil, ffi_string(C.weir_csv_error(c))
      end
      local seen = {}
      names = {}
      for i = 0, n - 1 do
        local name = field(i)
        if seen[name] then
          return nil, ("the header names column %q twice"):format(name)
        end
        seen[name] = true
        names[i + 1] = name
      end
      failed = false
      return false
    end
    if n < 0 then
      return nil, ffi_string(C.weir_csv_error(c))
    end
    if failed then
      return nil, "the CSV header (the first line) was not valid"
    end
    if names then
      if n ~= #names then
        return nil, ("expected %d field%s (as the header), got %d"):format(#names,
          #names == 1 and "" or "s", n)
      end
      local row = tnew(0, n)
      for i = 1, n do
        row[names[i]] = field(i - 1)
      end
      return true, row
    end
    local row = tnew(n, 0)
    for i = 1, n do
      row[i] = field(i - 1)
    end
    return true, row
  end
end

return M
