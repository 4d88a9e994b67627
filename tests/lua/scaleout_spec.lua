-- Specs for weir.scaleout's pure parts (the group runs are tests/cli/scale_*.sh): weir.key_group
-- is the hash exchange's key group (a key_by routes key k of a job with max_parallelism n to
-- key group weir.key_group(k, n)), the rule's precondition (one topic, max_parallelism = the
-- partition count), a partition's sections (its key group of every keyed part, plus the
-- source's), and the stray check (state in a key group not owned; an empty window section is
-- no state).
local spec = require("spec")
local weir = require("weir")
local C = require("weir.ffi")
local keys = require("weir.keys")
local scaleout = require("weir.scaleout")
local it, eq, raises = spec.it, spec.eq, spec.raises

it("key_group is Flink's key group of the key's Java hash", function()
  for _, k in ipairs({ "a", "k1", "k15", 7, 0, -3, "" }) do
    for _, n in ipairs({ 1, 8, 128 }) do
      local h = keys.java_hash(k)
      eq(weir.key_group(k, n), tonumber(C.weir_keygroup_of(h, n)))
      local g = weir.key_group(k, n)
      eq(g >= 0 and g < n, true)
    end
  end
  eq(weir.key_group("k1", 8), weir.key_group("k1", 8))
  raises(function() weir.key_group("a", 0) end, "n must be an integer from 1 to 32768")
  raises(function() weir.key_group("a", 1.5) end, "n must be an integer")
  raises(function() weir.key_group(function() end, 8) end, "weir.key_group: ")
end)

it("the rule: one topic and max_parallelism = the partition count", function()
  eq(scaleout.check_rule("g", {}, { "a", "b" }, 8), nil) -- nothing keyed: no rule
  local n = { label = "window (job.lua:3)", max_parallelism = 8 }
  eq(scaleout.check_rule("g", { n }, { "t" }, 8), nil)
  local why = scaleout.check_rule("g", { n }, { "t", "u" }, 8)
  eq(why:find("a keyed job reads one topic", 1, true) ~= nil, true)
  n.max_parallelism = 128
  why = scaleout.check_rule("g", { n }, { "t" }, 8)
  eq(why:find("window (job.lua:3) has max_parallelism 128", 1, true) ~= nil, true)
  eq(why:find("weir.key_group(k, 8)", 1, true) ~= nil, true)
end)

it("a partition's sections: its key group of each keyed part and the source's", function()
  local kparts = { { name = "keyed/a", raw = true }, { name = "window/b/state" } }
  local vals = { { [2] = "k2", [3] = "k3" }, { [3] = "w3", [5] = "w5" } }
  local src = { offset = 17 }
  local secs = scaleout.partition_sections(kparts, vals, 3, src)
  eq(#secs, 3)
  eq(secs[1].name, "source")
  eq(secs[1].value, src)
  eq(secs[2].name, "keyed/a")
  eq(secs[2].key_group, 3)
  eq(secs[2].value, "k3")
  eq(secs[2].raw, true)
  eq(secs[3].value, "w3")
  eq(#scaleout.partition_sections(kparts, vals, 4, src), 1)
  -- and they survive the state file's encoding
  local back = require("weir.checkpoint").decode_state(
    require("weir.checkpoint").encode_state(9, secs), 9)
  eq(back[2].key_group, 3)
  eq(back[3].value, "w3")
end)

it("stray key groups: state where the process owns no partition", function()
  local kparts = { { name = "keyed/a" }, { name = "window/b/state" } }
  local vals = { { [2] = "x" }, { [0] = { nkeys = 0 }, [-1] = "all" } }
  eq(scaleout.stray(kparts, vals, { [2] = true }), nil) -- empty section and kg -1: no state
  local kg, name = scaleout.stray(kparts, vals, { [3] = true })
  eq(kg, 2)
  eq(name, "keyed/a")
  vals[2][0] = { nkeys = 1 }
  kg, name = scaleout.stray(kparts, vals, { [2] = true })
  eq(kg, 0)
  eq(name, "window/b/state")
end)

spec.finish()
