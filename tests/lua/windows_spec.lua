-- Specs for weir.windows: window starts (SEMANTICS §4.2), assigners (§4.3-4.6), windows.
local spec = require("spec")
local weir = require("weir")
local windows = weir.windows
local it, eq, raises = spec.it, spec.eq, spec.raises

spec.describe("window_start", function()
  local cases = {
    { 1000, 0, 10000, 0 }, { 9999, 0, 10000, 0 }, { 10000, 0, 10000, 10000 },
    { -1, 0, 10000, -10000 }, { -10000, 0, 10000, -10000 }, { -10001, 0, 10000, -20000 },
    { 1000, 3000, 10000, -7000 }, { 1718157600000, -28800000, 86400000, 1718121600000 },
  }
  for _, c in ipairs(cases) do
    it(("ts %d offset %d size %d -> %d"):format(c[1], c[2], c[3], c[4]), function()
      eq(windows.window_start(c[1], c[2], c[3]), c[4])
    end)
  end
end)

spec.describe("assigners", function()
  local function assigned(a, ts)
    local starts = {}
    local n = a:assign(ts, 0, starts)
    local out = {}
    for i = 1, n do
      out[i] = tostring(windows.window(starts[i], a:stop(starts[i])))
    end
    return out
  end
  it("tumbling gives one window", function()
    eq(assigned(windows.tumbling_event_time("10s"), 12000), { "[10000, 20000)" })
  end)
  it("tumbling honours the offset", function()
    eq(assigned(windows.tumbling_event_time("1d", "-8h"), 1718157600000),
      { "[1718121600000, 1718208000000)" })
  end)
  it("sliding gives windows in descending start order", function()
    eq(assigned(windows.sliding_event_time("10s", "5s"), 12000),
      { "[10000, 20000)", "[5000, 15000)" })
  end)
  it("sliding handles negative timestamps", function()
    eq(assigned(windows.sliding_event_time("10s", "5s"), -1),
      { "[-5000, 5000)", "[-10000, 0)" })
  end)
  it("the global window prints as GlobalWindow", function()
    eq(assigned(windows.global(), 5), { "GlobalWindow" })
  end)
  it("rejects an offset as large as the size", function()
    raises(function() windows.tumbling_event_time("10s", "10s") end, "offset")
  end)
  it("rejects a bad duration naming it", function()
    raises(function() windows.tumbling_event_time("5 sec") end, 'invalid duration "5 sec"')
  end)
end)

spec.describe("windows", function()
  it("have start, stop and max_timestamp", function()
    local w = windows.window(0, 10000)
    eq({ w.start, w.stop, w:max_timestamp(), tostring(w) }, { 0, 10000, 9999, "[0, 10000)" })
  end)
end)

spec.finish()
