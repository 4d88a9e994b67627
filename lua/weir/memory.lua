-- weir.memory: the memory limit (weir.env{max_memory}, weir run --max-memory) and the figures of
-- weir's memory account (runtime/mem.c): what env:metrics(), --progress and the failure show.
local C = require("weir.ffi")

local M = {}

local OVER, REFUSED, FAILED = tonumber(C.WEIR_MEM_OVER), tonumber(C.WEIR_MEM_REFUSED),
  tonumber(C.WEIR_MEM_FAILED)
local MIB = 1048576

---A size in bytes from text ("2g", "512m", "100k", "4096": units of 1024) or a number of
---bytes (an integer >= 1); nil when v is neither.
---@return number|nil
function M.parse(v)
  if type(v) == "number" then
    if v >= 1 and v <= 2 ^ 53 and v == math.floor(v) then
      return v
    end
    return nil
  end
  if type(v) ~= "string" then
    return nil
  end
  local bytes = C.weir_mem_parse_size(v)
  return bytes >= 0 and bytes or nil
end

---"64.0 MiB"
function M.mib(bytes)
  return ("%.1f MiB"):format(bytes / MIB)
end

---"48 bytes" below 1 MiB, else as M.mib.
local function size_text(bytes)
  return bytes < MIB and ("%d bytes"):format(bytes) or M.mib(bytes)
end

-- How the limit in force was given, for the failure message: "--max-memory 64m".
local limit_text = nil

---Sets the process's limit (bytes; 0 = none) and how it was given (text for messages).
function M.set_limit(bytes, text)
  C.weir_mem_set_limit(bytes)
  limit_text = bytes > 0 and text or nil
end

---The limit in force and its text, for a caller that restores it later.
function M.limit()
  return C.weir_mem_stat(C.WEIR_MEM_LIMIT), limit_text
end

---What the account holds now, in bytes: total (C + Lua), c, lua, peak (the highest total so
---far), limit (0: none).
function M.figures()
  -- total from the same reading as its parts: resolving a name of C (the first time) allocates
  -- Lua memory between two calls
  local c, lua = C.weir_mem_stat(C.WEIR_MEM_C), C.weir_mem_stat(C.WEIR_MEM_LUA)
  return {
    total_bytes = c + lua, c_bytes = c, lua_bytes = lua,
    peak_bytes = C.weir_mem_stat(C.WEIR_MEM_PEAK), limit_bytes = C.weir_mem_stat(C.WEIR_MEM_LIMIT),
  }
end

---The --progress part: "memory 12.3 MiB" or, with a limit, "memory 12.3 of 64.0 MiB".
function M.progress_text()
  local f = M.figures()
  if f.limit_bytes > 0 then
    return ("memory %.1f of %s"):format(f.total_bytes / MIB, M.mib(f.limit_bytes))
  end
  return "memory " .. M.mib(f.total_bytes)
end

---The answer to the alarm (weir_mem_alarm; nil at once when it is quiet): collects garbage,
---then asks the account. Returns nil when weir may go on, else the weir_mem_check bits and the
---figures to report: for a limit passed, those after the collection; for a refusal or a system
---failure, those before it, since unwinding made the memory that hit the limit garbage.
---@return integer|nil, table|nil
function M.check()
  if C.weir_mem_alarm() == 0 then
    return nil
  end
  -- nothing allocates before the collection: the heap may be full (numbers are not objects,
  -- and the C functions were resolved when this module loaded)
  local total, c, lua = C.weir_mem_stat(C.WEIR_MEM_TOTAL), C.weir_mem_stat(C.WEIR_MEM_C),
    C.weir_mem_stat(C.WEIR_MEM_LUA)
  collectgarbage()
  local why = C.weir_mem_check()
  if why == 0 then
    return nil
  end
  local f = M.figures()
  if why ~= OVER then
    f.total_bytes, f.c_bytes, f.lua_bytes = total, c, lua
  end
  return why, f
end

---The failure message (without "weir: "). most: nil, or the window operator holding the most
---C state: {label, open_windows, elements, store_bytes}.
function M.failure_text(why, f, most)
  local held = ("%s (C %s, Lua heap %s)"):format(M.mib(f.total_bytes), M.mib(f.c_bytes),
    M.mib(f.lua_bytes))
  local lines = {}
  if why % (2 * FAILED) >= FAILED then
    lines[1] = ("out of memory: the system refused an allocation of %s; weir held %s")
      :format(size_text(C.weir_mem_stat(C.WEIR_MEM_FAILED_BYTES)), held)
    if f.limit_bytes > 0 then
      lines[1] = lines[1] .. (" (limit %s: %s)"):format(limit_text or "max_memory",
        M.mib(f.limit_bytes))
    end
  else
    local wanted = C.weir_mem_stat(C.WEIR_MEM_WANTED)
    lines[1] = ("memory limit reached: weir holds %s%s, the limit is %s (%s)%s"):format(held,
      wanted > 0 and (" and a table of its C state needs %s more to grow"):format(M.mib(wanted))
        or "", M.mib(f.limit_bytes), limit_text or "max_memory",
      why % (2 * REFUSED) >= REFUSED and "; a Lua allocation past it was refused" or "")
  end
  if most then
    lines[#lines + 1] = ("  most state: %s: %d open window(s), %d element(s), %s of C state")
      :format(most.label, most.open_windows, most.elements, M.mib(most.store_bytes))
  end
  lines[#lines + 1] = "  counted: weir's C state (window stores, timers, buffers) and the Lua "
    .. "heap (records, keys, window contents, user tables: not split by operator)"
  return table.concat(lines, "\n")
end

-- resolves the C functions of the failure path now, while there is memory for it
local _ = C.weir_mem_check and C.weir_mem_alarm and M.figures()
-- set-up code, never traced (weir.codegen, "Set-up code"): once per job, at its start
jit.off(M.set_limit)
return M
