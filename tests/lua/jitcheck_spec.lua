-- Specs for jitcheck, the watch over compiled traces that spec.lua starts: it finds calls to a
-- given address in machine code and tells the 32-bit swap after lj_vm_next from the 64-bit one.
local spec = require("spec")
local jitcheck = require("jitcheck")
local it, eq = spec.it, spec.eq

local function bytes(...)
  return string.char(...)
end

it("finds a call rel32 by its target, forwards and backwards", function()
  -- at 0x1000: call 0x2000 (rel 0x2000 - 0x1005 = 0xffb), then at 0x1006: call 0x800
  local mc = bytes(0xe8, 0xfb, 0x0f, 0x00, 0x00, 0x92, 0xe8, 0xf5, 0xf7, 0xff, 0xff, 0x48, 0x92)
  eq(jitcheck.calls_to(mc, 0x1000, 0x2000), { 6 })
  eq(jitcheck.calls_to(mc, 0x1000, 0x800), { 12 })
  eq(jitcheck.calls_to(mc, 0x1000, 0x3000), {})
end)

it("tells xchg eax, edx (the miscompile) from xchg rax, rdx", function()
  local bad = bytes(0xe8, 0xfb, 0x0f, 0x00, 0x00, 0x92)
  local good = bytes(0xe8, 0xfb, 0x0f, 0x00, 0x00, 0x48, 0x92)
  eq(jitcheck.swaps_32bit(bad, jitcheck.calls_to(bad, 0x1000, 0x2000)[1]), true)
  eq(jitcheck.swaps_32bit(good, jitcheck.calls_to(good, 0x1000, 0x2000)[1]), false)
end)

it("watches the traces of every spec on x64 with the JIT on", function()
  if jit.arch == "x64" and jit.status() then
    eq(jitcheck.watching, true, "found lj_vm_next in a compiled next() loop")
  end
end)

it("has seen no miscompiled trace so far", function()
  eq(jitcheck.report(), nil)
end)

spec.finish()
