-- Specs for weir.keys: Flink-identical key groups for Lua keys (API.md, key_by).
local spec = require("spec")
local keys = require("weir.keys")
local it, eq, raises = spec.it, spec.eq, spec.raises

local function subtask(k, p)
  return keys.subtask(k, 128, p)
end

it("puts a on subtask 1 and b, c on subtask 0 at parallelism 2", function()
  eq(subtask("a", 2), 1)
  eq(subtask("b", 2), 0)
  eq(subtask("c", 2), 0)
end)
it("hashes non-ASCII strings over UTF-16 units", function()
  eq(keys.java_hash("é"), 233)
  eq(keys.java_hash("€"), 8364)
  eq(keys.java_hash("😀"), 1772899)
  eq(subtask("€", 4), 2)
  eq(subtask("😀", 3), 1)
end)
it("hashes integers as Integer and large ones as Long", function()
  eq(keys.java_hash(97), 97)
  eq(keys.java_hash(-1), -1)
  eq(keys.java_hash(2 ^ 32), 1)            -- Long: (int)(v ^ v >>> 32)
  local groups = {}
  for v = 0, 5 do
    groups[#groups + 1] = subtask(v, 2)
  end
  eq(groups, { 1, 1, 1, 1, 0, 1 })
end)
it("hashes other numbers as Double", function()
  eq(keys.java_hash(1.5), 1073217536)      -- Double.hashCode(1.5)
end)
it("hashes booleans as Java does", function()
  eq(keys.java_hash(true), 1231)
  eq(keys.java_hash(false), 1237)
end)
it("hashes a sequence table as a Flink tuple", function()
  eq(keys.java_hash({ "a" }), 97)
  eq(keys.java_hash({ "a", 1 }), 31 * 97 + 1)
  eq(keys.java_hash({ "a", "b", "c" }), 96354)   -- same as the string "abc"
end)
it("names keys it cannot hash", function()
  raises(function() subtask(function() end, 2) end, "cannot hash key", "function")
  raises(function() subtask({ x = 1 }, 2) end, "cannot hash key", "sequence")
  raises(function() subtask(nil, 2) end, "returned nil")
end)
it("bounds tuple nesting and says when a key contains itself", function()
  local k = "x"
  for _ = 1, keys.MAX_DEPTH do
    k = { k }
  end
  eq(keys.java_hash(k), keys.java_hash("x")) -- each one-field level hashes as 31 * 0 + h
  raises(function() subtask({ k }, 2) end, "nest at most 32 deep")
  local c = { 1 }
  c[2] = c
  raises(function() subtask(c, 2) end, "cannot contain itself")
  local d = { 1, { 2 } }
  d[2][2] = d
  raises(function() subtask(d, 2) end, "cannot contain itself")
end)
it("hashes every NaN as Double.hashCode's canonical NaN", function()
  local nan = 0 / 0
  eq(keys.java_hash(nan), 2146959360)
  eq(keys.java_hash(-nan), 2146959360)
end)

spec.finish()
