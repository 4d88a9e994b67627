-- Specs for what a weir process sets up before the job: the collector's settings (bridge.c) and
-- what loads only on first use (JSON: runtime/json_lazy.c; lpeg: weir.duration), each in a
-- weir process of its own (a job), since this spec's own process has loaded other things.
local spec = require("spec")
local it, eq = spec.it, spec.eq

local weir_binary = spec.weir_binary

local weir = weir_binary()

-- Runs job (Lua text) with weir run; returns what it printed.
local function run(job)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(job)
  f:close()
  local p = assert(io.popen(("%q run %q 2>&1"):format(weir, path)))
  local out = p:read("*a")
  p:close()
  os.remove(path)
  return out
end

-- A job's lines: which libraries its process maps, then a generate -> print job (durations given
-- as numbers), then, after it, JSON decoded.
local PROBE = [[
local function mapped(name)
  local f = assert(io.open("/proc/self/maps"))
  local maps = f:read("*a")
  f:close()
  return maps:find(name, 1, true) ~= nil
end
local weir = require("weir")
local env = weir.env{ parallelism = 1, auto_watermark_interval = 200 }
env:generate(function(i) return i end, { count = 2 }):print()
env:execute("probe")
print("simdjson", mapped("libsimdjson"), "jansson", mapped("libjansson"), "lpeg",
  package.loaded.lpeg ~= nil)
local t = weir.json.decode('{"a": [1, 2]}')
print("decoded", t.a[2], "simdjson", mapped("libsimdjson"))
]]

it("the collector's pause is 150% for a job, and the job's own setting wins", function()
  eq(run([[print(collectgarbage("setpause", 300), collectgarbage("setpause", 300))]]),
    "150\t300\n")
end)

-- (not libstdc++: a sanitizer build's runtime maps it anyway)
it("a job without JSON or duration text maps no simdjson, jansson or lpeg", function()
  local out = run(PROBE)
  eq(out:match("simdjson\t%a+\tjansson\t%a+\tlpeg\t%a+\n"),
    "simdjson\tfalse\tjansson\tfalse\tlpeg\tfalse\n", out)
end)

it("the first JSON call loads the JSON module", function()
  local out = run(PROBE)
  eq(out:match("decoded\t[^\n]*\n"), "decoded\t2\tsimdjson\ttrue\n", out)
end)

it("duration text loads lpeg then", function()
  eq(run([[
local d = require("weir.duration")
print(package.loaded.lpeg ~= nil, d.parse("1h30m"), package.loaded.lpeg ~= nil)]]),
    "false\t5400000\ttrue\n")
end)
