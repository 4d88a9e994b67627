-- Specs for weir.lazy: a module loaded on first use.
local spec = require("spec")
local lazy = require("weir.lazy")
local it, eq = spec.it, spec.eq

spec.describe("lazy.require", function()
  it("loads the module on the first read, then reads and writes its table", function()
    local loads = 0
    package.preload["lazy_spec_mod"] = function()
      loads = loads + 1
      return { answer = 42, f = function(x) return x + 1 end }
    end
    local m = lazy.require("lazy_spec_mod")
    eq(loads, 0, "not loaded by lazy.require")
    eq(package.loaded["lazy_spec_mod"], nil)
    eq(m.answer, 42)
    eq(loads, 1)
    eq(m.f(1), 2)
    m.extra = "x"
    eq(package.loaded["lazy_spec_mod"].extra, "x", "a write goes to the module")
    eq(loads, 1, "loaded once")
  end)
  it("loads on a first write too", function()
    package.preload["lazy_spec_mod2"] = function() return {} end
    local m = lazy.require("lazy_spec_mod2")
    m.v = 1
    eq(package.loaded["lazy_spec_mod2"].v, 1)
    eq(m.v, 1)
  end)
  it("returns a loaded module itself", function()
    eq(lazy.require("weir.lazy"), lazy)
  end)
  it("a first use inside a trace being recorded does not abort it", function()
    -- the stand-ins' metamethods are not set-up code: a module's first use from run-time code
    -- may fall inside a trace (jit_aborts_spec: "JIT compilation disabled for function")
    package.preload["lazy_spec_hot"] = function() return { x = 1 } end
    local proxies = {}
    for i = 1, 300 do
      package.loaded["lazy_spec_hot"] = nil
      proxies[i] = lazy.require("lazy_spec_hot")
    end
    local aborts = {}
    local jutil = require("jit.util")
    local function watch(what, _, func, pc)
      if what == "abort" and jutil.funcinfo(func, pc).source:find("lazy%.lua$") then
        aborts[#aborts + 1] = jutil.funcinfo(func, pc).loc
      end
    end
    jit.attach(watch, "trace")
    local s = 0
    for i = 1, 300 do
      package.loaded["lazy_spec_hot"] = nil -- each stand-in loads the module anew
      s = s + proxies[i].x
    end
    jit.attach(watch)
    eq(s, 300)
    eq(table.concat(aborts, ", "), "", "no trace aborted in weir.lazy")
  end)
end)

spec.finish()
