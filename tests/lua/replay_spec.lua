-- Specs for weir.replay: the timed text format of API.md.
local spec = require("spec")
local replay = require("weir.replay")
local it, eq, raises = spec.it, spec.eq, spec.raises

local function parse(text)
  local entries, start = replay.parse(text, "t.replay")
  local out = {}
  for i, e in ipairs(entries) do
    out[i] = { e[1], e[3] >= 0 and text:sub(e[2] + 1, e[2] + e[3]) or false, e[4] }
  end
  return out, start
end

it("starts the clock at 0 unless the first line sets it", function()
  local _, start = parse("a\n")
  eq(start, 0)
  local e, start2 = parse("@1718088600500 a\n")
  eq(start2, 1718088600500)
  eq(e, { { 1718088600500, "a", 1 } })
end)
it("reads absolute and relative times", function()
  eq(parse("@0 a 1\n+1s a 10\n+250ms x\n"),
    { { 0, "a 1", 1 }, { 1000, "a 10", 2 }, { 1250, "x", 3 } })
end)
it("treats a bare timing line as an advance of the clock", function()
  eq(parse("a\n+11s\n"), { { 0, "a", 1 }, { 11000, false, 2 } })
end)
it("ignores comments and blank lines", function()
  eq(parse("# c\n\na\n"), { { 0, "a", 3 } })
end)
it("delivers other lines as records at the current time", function()
  eq(parse("+2s x\n@x not timing\n+1 y\n+1sec z\n"),
    { { 2000, "x", 1 }, { 2000, "@x not timing", 2 }, { 2001, "y", 3 },
      { 2001, "+1sec z", 4 } })
end)
it("unescapes a leading backslash", function()
  eq(parse("\\+1s is a record\n"), { { 0, "+1s is a record", 1 } })
end)
it("strips a CR before the newline and reads a last line without newline", function()
  eq(parse("a\r\nb"), { { 0, "a", 1 }, { 0, "b", 2 } })
end)
it("names the line where time goes back", function()
  raises(function() replay.parse("@5000 a\n@10 b\n", "t.replay") end,
    "t.replay:2: time goes back")
end)

it("keeps the clock within 2^52 ms, naming the file and line (API.md, Time range)", function()
  local max = 2 ^ 52
  eq(parse("@4503599627370496 a\n"), { { max, "a", 1 } })
  eq(parse("@4503599627370495 a\n+1 b\n"), { { max - 1, "a", 1 }, { max, "b", 2 } })
  local beyond = "is beyond the time range: the clock can reach 2^52 ms (4503599627370496)"
  raises(function() replay.parse("@99999999999999999999 a\n", "t.replay") end,
    "t.replay:1: @99999999999999999999 " .. beyond)
  raises(function() replay.parse("@9223372036854775807 a\n", "t.replay") end,
    "t.replay:1: @9223372036854775807 " .. beyond)
  raises(function() replay.parse("+99999999999999999999d a\n", "t.replay") end,
    "t.replay:1: +99999999999999999999d " .. beyond)
  raises(function() replay.parse("@0 a\n+106751991167d b\n", "t.replay") end,
    "t.replay:2: +106751991167d " .. beyond)
  raises(function() replay.parse("@4503599627370496 a\n+1ms\n", "t.replay") end,
    "t.replay:2: +1ms " .. beyond)
  -- going back beyond 2^53 (where doubles skip odd numbers) cannot get that far
  raises(function() replay.parse("@9007199254740993 a\n@9007199254740992 b\n", "t.replay") end,
    "t.replay:1: @9007199254740993 " .. beyond)
  raises(function() replay.parse("@4503599627370496 a\n@4503599627370495 b\n", "t.replay") end,
    "t.replay:2: time goes back (@4503599627370495 is before the clock's 4503599627370496)")
end)

spec.finish()
