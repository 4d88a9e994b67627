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
end)

spec.finish()
