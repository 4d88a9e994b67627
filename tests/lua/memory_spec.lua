-- Specs for the memory limit (weir.env{max_memory}) and the memory account's figures
-- (env:metrics().memory): sizes, build errors, the limit in force only while a job runs, and
-- a job failing at it that leaves the next job a clean account.
local spec = require("spec")
local weir = require("weir")
local memory = require("weir.memory")
local it, eq, raises = spec.it, spec.eq, spec.raises

spec.describe("max_memory sizes", function()
  it("reads bytes and units of 1024", function()
    eq({ memory.parse("4096"), memory.parse("100k"), memory.parse("512m"), memory.parse("2g"),
         memory.parse("1.5G"), memory.parse(1048576) },
      { 4096, 102400, 512 * 2 ^ 20, 2 ^ 31, 1.5 * 2 ^ 30, 1048576 })
  end)
  it("rejects what is not a size, naming it and the script line", function()
    for _, bad in ipairs({ "lots", "5x", "", "-1", "0", "1e3" }) do
      raises(function() weir.env{ max_memory = bad } end,
        "weir.env: max_memory must be a size", ("got %q"):format(bad), "memory_spec.lua:")
    end
    for _, bad in ipairs({ 0, -5, 1.5, 2 ^ 60 }) do
      raises(function() weir.env{ max_memory = bad } end, "max_memory must be a size",
        "got " .. tostring(bad))
    end
    raises(function() weir.env{ max_memory = {} } end, "max_memory must be a size", "got table")
  end)
end)

local function limit_now()
  return (memory.limit())
end

spec.describe("the limit", function()
  it("is in force while the job runs, and gone after", function()
    local env = weir.env{ max_memory = "1g" }
    local seen = {}
    env:from_collection({ 1 }):sink(function() seen[1] = limit_now() end)
    eq(limit_now(), 0, "before")
    env:execute()
    eq(seen[1], 2 ^ 30, "while the job runs")
    eq(limit_now(), 0, "after")
  end)

  it("fails a job whose state passes it, and leaves the next job a clean account", function()
    local env = weir.env{ max_memory = "40m" }
    local kept = {}
    env:generate(function(i) return i end)
      :map(function(i)
        kept[#kept + 1] = { i }
        return i
      end)
      :sink(function() end)
    local ok, err = pcall(env.execute, env)
    eq(ok, false)
    eq(type(err) == "table" and err.memory, true, "a memory failure")
    eq(err.text:find("memory limit reached: weir holds", 1, true) ~= nil, true, err.text)
    eq(err.text:find("the limit is 40.0 MiB (max_memory 40m)", 1, true) ~= nil, true, err.text)
    local m = env:metrics().memory
    eq(m.limit_bytes, 40 * 2 ^ 20)
    eq(m.total_bytes > 35 * 2 ^ 20, true, "the figures at the failure")
    eq(limit_now(), 0, "the limit is gone after the job")
    kept = nil -- luacheck: ignore kept
    collectgarbage()
    local env2 = weir.env{ max_memory = "40m" }
    local out = env2:from_collection({ 1, 2, 3 }):map(function(i) return i * 2 end):collect()
    env2:execute()
    eq(out:values(), { 2, 4, 6 })
  end)
end)

spec.describe("env:metrics().memory", function()
  it("holds the account's figures; pairs lists only the window operators", function()
    local env = weir.env()
    env:from_collection({ 1, 2 })
      :assign_timestamps_and_watermarks(
        weir.watermarks.monotonous():with_timestamp_assigner(function(v) return v end))
      :key_by(function(v) return v end)
      :window(weir.windows.tumbling_event_time("1s"))
      :reduce(function(a, b) return a + b end)
      :sink(function() end)
    env:execute()
    local m = env:metrics()
    local labels = {}
    for label in pairs(m) do
      labels[#labels + 1] = label
    end
    eq(#labels, 1)
    local f = m.memory
    eq(f.c_bytes + f.lua_bytes, f.total_bytes)
    eq(f.total_bytes > 0 and f.c_bytes > 0 and f.lua_bytes > 0, true)
    eq(f.peak_bytes >= f.total_bytes, true)
    eq(f.limit_bytes, 0)
  end)
end)

spec.finish()
