-- Specs for weir.repl_words: the REPL's completion words, in the three sections
-- weir_repl_set_words takes (first word of a line only, anywhere, not first).
local spec = require("spec")
local weir = require("weir")
local repl_words = require("weir.repl_words")
local it, eq = spec.it, spec.eq

-- The words split into their sections, each a set.
local function sections(commands, globals)
  local text = repl_words.words(commands, globals)
  local out, i = { {} }, 1
  for w in (text .. "\0"):gmatch("(%Z*)%z") do
    if w == "" then
      i = i + 1
      out[i] = {}
    else
      out[i][w] = true
    end
  end
  return out
end

local function globals(t)
  return setmetatable(t, { __index = _G })
end

it("has three sections, the commands first and only there", function()
  local s = sections({ ":start", ":help" }, globals({ weir = weir }))
  eq(#s, 3)
  eq(s[1], { [":start"] = true, [":help"] = true })
  eq(s[2][":start"], nil)
  eq(s[3][":start"], nil)
end)

it("offers the prompt's globals, their fields and methods, and _G's names", function()
  local Obj = { __index = { go = function() end, _private = function() end } }
  local g = globals({ weir = weir, cfg = { depth = 1, sub = { leaf = 2 } },
                      obj = setmetatable({}, Obj), _hidden = 1 })
  local s = sections({}, g)[2]
  eq(s.cfg and s["cfg.depth"] and s["cfg.sub"], true)
  eq(s["cfg.sub.leaf"], nil) -- one level of a global's fields
  eq(s["obj:go"], true)
  eq(s["obj:_private"], nil)
  eq(s._hidden, nil)
  eq(s.print and s["string.format"] and s["math.floor"], true)
end)

it("offers weir's documented API, not its plumbing", function()
  local s = sections({}, globals({ weir = weir }))[2]
  eq(s.weir and s["weir.env"] and s["weir.windows"], true)
  eq(s["weir.duration"], nil)
  eq(s["weir.format"], nil)
end)

it("offers every stream's methods after a colon, in the last section", function()
  local s = sections({}, globals({ weir = weir }))
  eq(s[3][":map"] and s[3][":key_by"], true)
  eq(s[3][":reduce"], true)
  eq(s[3][":window"] and s[3][":trigger"] and s[3][":allowed_lateness"], true)
  eq(s[2][":map"], nil)
end)

spec.finish()
