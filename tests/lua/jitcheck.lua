-- jitcheck: watches every trace LuaJIT compiles during a spec for the x64 miscompile of
-- next()/pairs() that Debian 12's libluajit-5.1 (git20220320) has, fixed in LuaJIT by "x64: Fix
-- RETHI/RETLO swap after call". A compiled next() calls lj_vm_next, which returns a pointer in
-- rax and an index in edx; when the register allocator wants them the other way round, the
-- broken LuaJIT swaps them with a 32-bit `xchg eax, edx` (byte 0x92) instead of the 64-bit
-- `xchg rax, rdx` (0x48 0x92), cutting the pointer to 32 bits. The pointer is often a stack
-- address, so the trace then reads an unmapped address: the intermittent SEGV in
-- lua_aggwindow_spec. Which traces get that allocation depends on LuaJIT's random trace
-- penalties, so a spec hits it only now and then; this check finds the bad instruction even when
-- the truncated pointer happens to be harmless, and names it, where the crash named nothing.
local jutil = require("jit.util")
local vmdef = require("jit.vmdef")

local M = { bad = {} }

local function irname(op)
  return vmdef.irnames:sub(op * 6 + 1, op * 6 + 6)
end

---Byte offsets (1-based) of the bytes right after each `call rel32` in mcode (placed at addr)
---whose target is target.
function M.calls_to(mcode, addr, target)
  local found = {}
  for i = 1, #mcode - 5 do
    if mcode:byte(i) == 0xe8 then
      local b1, b2, b3, b4 = mcode:byte(i + 1, i + 4)
      local rel = b1 + b2 * 0x100 + b3 * 0x10000 + b4 * 0x1000000
      if rel >= 0x80000000 then
        rel = rel - 0x100000000
      end
      if addr + (i - 1) + 5 + rel == target then
        found[#found + 1] = i + 5
      end
    end
  end
  return found
end

---Whether the code after a call to lj_vm_next at byte offset i of mcode swaps rax and rdx with
---a 32-bit xchg (the miscompile).
function M.swaps_32bit(mcode, i)
  return mcode:byte(i) == 0x92
end

-- The address of lj_vm_next: the CALLL followed by a HIOP (its index half) in the trace of a
-- next() loop compiled here. nil when the JIT is off or compiles next() otherwise.
local function vm_next_address()
  local t, n = {}, 0
  for _ = 1, 100 do
    if next(t) == nil then
      n = n + 1
    end
  end
  for tr = 1, 100000 do
    local info = jutil.traceinfo(tr)
    if not info then
      break
    end
    for ins = 1, info.nins - 1 do
      local _, ot, _, op2 = jutil.traceir(tr, ins)
      local _, ot2 = jutil.traceir(tr, ins + 1)
      if irname(math.floor(ot / 256)) == "CALLL " and irname(math.floor(ot2 / 256)) == "HIOP  " then
        return jutil.ircalladdr(op2)
      end
    end
  end
  return nil
end

---Starts watching (x64 only): every trace compiled from now on is checked when it is made.
function M.start()
  if jit.arch ~= "x64" or not jit.status() then
    return
  end
  local target = vm_next_address()
  if not target then
    return
  end
  M.watching = true
  jit.attach(function(what, tr, func, pc)
    if what ~= "stop" then
      return
    end
    local mcode, addr = jutil.tracemc(tr)
    if not mcode then
      return
    end
    for _, i in ipairs(M.calls_to(mcode, addr, target)) do
      if M.swaps_32bit(mcode, i) then
        local info = jutil.funcinfo(func, pc)
        M.bad[#M.bad + 1] = ("trace %d (%s)"):format(tr, tostring(info.loc))
      end
    end
  end, "trace")
end

---An error message when some trace had the miscompile, else nil.
function M.report()
  if #M.bad == 0 then
    return nil
  end
  return ("LuaJIT cut next()'s pointer to 32 bits (xchg eax, edx after lj_vm_next) in %s: "
    .. "this LuaJIT lacks the fix \"x64: Fix RETHI/RETLO swap after call\"; "
    .. "scripts/setup.sh installs libluajit2-5.1-dev"):format(table.concat(M.bad, ", "))
end

return M
