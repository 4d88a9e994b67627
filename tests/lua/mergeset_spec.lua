-- Specs for weir.mergeset, Flink's MergingWindowSet: windows that touch merge into one that
-- keeps the first one's state window (its entry, widened), a window inside another adds
-- nothing, and on random session windows the set and what merged equal a reference that
-- merges by brute force.
local spec = require("spec")
local mergeset = require("weir.mergeset")
local it, eq = spec.it, spec.eq

local function spans(sets, kid)
  local out = {}
  for _, e in ipairs(mergeset.entries(sets, kid)) do
    out[#out + 1] = { e.start, e.stop, e.sstart, e.sstop }
  end
  return out
end

it("a window that touches none is its own state window", function()
  local sets = mergeset.new()
  local e, merged = mergeset.add(sets, 1, 10, 20)
  eq({ e.start, e.stop, e.sstart, e.sstop }, { 10, 20, 10, 20 })
  eq(merged, nil)
  mergeset.add(sets, 1, 30, 40)
  mergeset.add(sets, 2, 15, 25)
  eq(spans(sets, 1), { { 10, 20, 10, 20 }, { 30, 40, 30, 40 } })
  eq(spans(sets, 2), { { 15, 25, 15, 25 } })
end)

it("a window inside another merges nothing", function()
  local sets = mergeset.new()
  local first = mergeset.add(sets, 1, 10, 20)
  local e, merged = mergeset.add(sets, 1, 12, 18)
  eq(e == first, true)
  eq(merged, nil)
end)

it("a bridging window merges the run it touches into the first's state window", function()
  local sets = mergeset.new()
  mergeset.add(sets, 1, 10, 20)
  mergeset.add(sets, 1, 30, 40)
  mergeset.add(sets, 1, 60, 70)
  local e, merged = mergeset.add(sets, 1, 20, 30) -- touches both ends (Flink: intersects)
  eq({ e.start, e.stop, e.sstart, e.sstop }, { 10, 40, 10, 20 })
  eq(#merged, 2)
  eq({ merged[1].start, merged[2].start }, { 10, 30 })
  eq(spans(sets, 1), { { 10, 40, 10, 20 }, { 60, 70, 60, 70 } })
  eq(mergeset.find(sets, 1, 10, 40) == e, true)
  eq(mergeset.find(sets, 1, 10, 20), nil)
end)

it("the merge result is the first window's entry, widened; the list is the next add's", function()
  local sets = mergeset.new()
  local a = mergeset.add(sets, 1, 10, 20)
  mergeset.add(sets, 1, 30, 40)
  mergeset.add(sets, 1, 50, 60)
  local e, merged = mergeset.add(sets, 1, 15, 55) -- swallows all three
  eq(e == a, true)
  eq({ e.start, e.stop, e.sstart, e.sstop }, { 10, 60, 10, 20 })
  eq(#merged, 3)
  eq({ merged[1].stop, merged[2].start, merged[3].sstart }, { 20, 30, 50 })
  eq(spans(sets, 1), { { 10, 60, 10, 20 } })
  mergeset.add(sets, 1, 70, 80)
  local e2, merged2 = mergeset.add(sets, 1, 75, 85) -- one swallowed: the list is that one
  eq({ e2.start, e2.stop, e2.sstart, e2.sstop }, { 70, 85, 70, 80 })
  eq(#merged2, 1)
  eq({ merged2[1].start, merged2[1].stop }, { 70, 80 })
  eq(spans(sets, 1), { { 10, 60, 10, 20 }, { 70, 85, 70, 80 } })
end)

it("retire takes a window out, and the key's set goes with its last", function()
  local sets = mergeset.new()
  mergeset.add(sets, 1, 10, 20)
  mergeset.add(sets, 1, 30, 40)
  mergeset.retire(sets, 1, 10, 20)
  eq(spans(sets, 1), { { 30, 40, 30, 40 } })
  mergeset.retire(sets, 1, 99, 100) -- not in flight: nothing
  mergeset.retire(sets, 1, 30, 40)
  eq(sets[1], nil)
end)

it("random sessions equal a brute-force merge", function()
  math.randomseed(7)
  for _ = 1, 200 do
    local sets, ref = mergeset.new(), {}
    for _ = 1, 30 do
      local s = math.random(0, 200)
      local e = s + math.random(1, 15)
      local entry, merged = mergeset.add(sets, 1, s, e)
      -- reference: every window touching [lo, hi] widens it and goes, until none touches
      local lo, hi = s, e
      local gone = {}
      local i = 1
      while i <= #ref do
        local r = ref[i]
        if r[1] <= hi and r[2] >= lo then
          lo, hi = math.min(lo, r[1]), math.max(hi, r[2])
          gone[#gone + 1] = table.remove(ref, i)
          i = 1
        else
          i = i + 1
        end
      end
      ref[#ref + 1] = { lo, hi }
      table.sort(ref, function(a, b) return a[1] < b[1] end)
      table.sort(gone, function(a, b) return a[1] < b[1] end)
      eq({ entry.start, entry.stop }, { lo, hi })
      -- what merged: the windows that went, as they were (none when one held the new window)
      if #gone == 1 and gone[1][1] == lo and gone[1][2] == hi then
        eq(merged, nil)
      elseif #gone == 0 then
        eq(merged, nil)
      else
        local was = {}
        for k, x in ipairs(merged) do
          was[k] = { x.start, x.stop }
        end
        eq(was, gone)
      end
      local got = {}
      for _, x in ipairs(mergeset.entries(sets, 1)) do
        got[#got + 1] = { x.start, x.stop }
        eq(x.sstart >= x.start and x.sstop <= x.stop, true) -- the state window is inside
      end
      eq(got, ref)
    end
  end
end)

spec.finish()
