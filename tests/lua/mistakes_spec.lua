-- Specs for weir.mistakes: the build errors for everyday slips (names that are no method,
-- methods called with a dot), raised at the user's line.
local spec = require("spec")
local weir = require("weir")
local mistakes = require("weir.mistakes")
local it, eq, raises = spec.it, spec.eq, spec.raises

it("measures edits between names", function()
  eq(mistakes.edit_distance("windw", "window"), 1)
  eq(mistakes.edit_distance("", "map"), 3)
  eq(mistakes.edit_distance("key_by", "key_by"), 0)
end)

it("suggests the nearest method, not a far one", function()
  local t = { window = function() end, map = function() end, _internal = function() end }
  eq(mistakes.closest("windw", { t }), "window")
  eq(mistakes.closest("mapp", { t }), "map")
  eq(mistakes.closest("reduce", { t }), nil)
  eq(mistakes.closest("_internl", { t }), nil)
end)

it("names the object and the fix for a name that is no method", function()
  local env = weir.env()
  local s = env:from_elements(1)
  local k = s:key_by(function(v) return v end)
  raises(function() return k:windw() end,
    "KeyedStream has no method 'windw' (did you mean window?)")
  raises(function() return s:window() end, "DataStream has no method 'window'; window applies to "
    .. "a keyed stream")
  raises(function() return k:window(weir.windows.global()):print() end, "WindowedStream has no "
    .. "method 'print'; a windowed stream needs a window function")
  raises(function() return s:print():map(tostring) end, "Sink has no method 'map'; a sink ends")
  raises(function() return s:execute() end, "execute is a method of the environment")
  raises(function() return env:from_element(1) end, "did you mean from_elements?")
  raises(function() return env:map(1) end, "map is a stream method")
  raises(function() return k:windw() end, "mistakes_spec.lua:")
end)

it("leaves fields and methods alone", function()
  local env = weir.env()
  eq(env.batch_size, nil)
  eq(env.some_field_weir_reads, nil)
  eq(env.some_field_weir_reads, nil) -- remembered: no search the second time
  local k = env:from_elements(1):key_by(function(v) return v end)
  eq(type(k.map), "function") -- a stream method through a keyed stream
  local w = k:window(weir.windows.global())
  eq(w.trigger_, nil)
end)

it("names a method called with a dot", function()
  local env = weir.env()
  local s = env:from_elements(1)
  raises(function() s.map(tostring) end, "got nil (called with a dot? stream:map(...) needs a "
    .. "colon)")
  local ok, err = pcall(env.from_elements, 1, 2)
  eq(ok, false)
  eq(mistakes.dot_call("x"), nil)
  eq(type(err), "string")
end)

spec.finish()
