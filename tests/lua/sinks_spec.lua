-- Specs for sinks: write_text (file and directory), sink(fn) with its context, and explain.
local spec = require("spec")
local weir = require("weir")
local it, eq, raises = spec.it, spec.eq, spec.raises

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir) == 0)

local function read(path)
  local fh = assert(io.open(path, "rb"))
  local s = fh:read("*a")
  fh:close()
  return s
end

it("write_text writes one value per line at parallelism 1", function()
  local env = weir.env()
  env:from_elements("a", { "b", 2 }, 3.5):write_text(dir .. "/one.txt")
  env:execute()
  eq(read(dir .. "/one.txt"), "a\n(b,2)\n3.5\n")
end)

it("write_text writes a directory of files 1..N at parallelism N", function()
  local env = weir.env{ parallelism = 2 }
  env:from_elements("a", "b", "c"):map(function(v) return v end):write_text(dir .. "/many")
  env:execute()
  eq(read(dir .. "/many/1"), "a\nc\n")
  eq(read(dir .. "/many/2"), "b\n")
end)

it("write_text refuses to replace a file unless told to", function()
  local env = weir.env()
  env:from_elements("x"):write_text(dir .. "/one.txt")
  raises(function() env:execute() end, "already exists", "overwrite = true")
  local env2 = weir.env()
  env2:from_elements("x"):write_text(dir .. "/one.txt", { overwrite = true })
  env2:execute()
  eq(read(dir .. "/one.txt"), "x\n")
end)

it("sink(fn) gets each value and a context", function()
  local got = {}
  local env = weir.env()
  env:from_elements(1, 2):sink(function(v, ctx)
    got[#got + 1] = { v, ctx:timestamp() == nil, ctx:current_watermark() }
  end)
  env:execute()
  eq(got, { { 1, true, -math.huge }, { 2, true, -math.huge } })
end)

it("a rich sink may name its method sink or invoke", function()
  local got = {}
  local env = weir.env()
  env:from_elements(1):sink({ invoke = function(_, v) got[#got + 1] = v end })
  env:from_elements(2):sink({ sink = function(_, v) got[#got + 1] = v end })
  env:execute()
  eq(got, { 1, 2 })
end)

os.execute("rm -rf " .. dir)
spec.finish()
