-- weir.mergeset: Flink's MergingWindowSet (SEMANTICS §5.4, §5.7) for the general window
-- operator's merging (session) windows. Per key id, a list of the in-flight windows sorted by
-- start, each { start, stop, sstart, sstop } with the state window [sstart, sstop) whose store
-- slot holds its contents (the first window of a merge keeps its state window). In-flight
-- windows never overlap, so the windows a new one touches are a contiguous run found by binary
-- search: O(log n) to find, plus the run's length. The operator runs the merge itself
-- (trigger.on_merge, the contents): M.add says what merged.
local M = {}

local floor = math.floor

---The sets of one subtask: key id -> sorted list of entries.
function M.new()
  return {}
end

local function first_touching(m, start)
  local lo, hi = 1, #m + 1
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if m[mid].stop < start then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return lo
end

local function find_entry(m, start, stop)
  local i = first_touching(m, start)
  local e = m[i]
  if e and e.start == start and e.stop == stop then
    return i, e
  end
  return nil
end

---The in-flight entry of key id kid that is the window [start, stop), or nil.
function M.find(sets, kid, start, stop)
  local m = sets[kid]
  if not m then
    return nil
  end
  local _, e = find_entry(m, start, stop)
  return e
end

---MergingWindowSet.addWindow: the in-flight entry the new window [s, e) of key id kid ends in,
---and, when it merged, the list of the entries it swallowed (already out of the set, the new
---entry in), which the operator merges into it.
function M.add(sets, kid, s, e)
  local m = sets[kid]
  if not m then
    m = {}
    sets[kid] = m
  end
  local i = first_touching(m, s)
  local j = i
  while j <= #m and m[j].start <= e do
    j = j + 1
  end
  if j == i then
    local entry = { start = s, stop = e, sstart = s, sstop = e }
    table.insert(m, i, entry)
    return entry
  end
  if j == i + 1 and m[i].start <= s and m[i].stop >= e then
    return m[i] -- inside an existing window: no merge
  end
  local merged = {}
  for k = i, j - 1 do
    merged[#merged + 1] = m[k]
  end
  local first = merged[1]
  local entry = { start = math.min(s, first.start), stop = math.max(e, m[j - 1].stop),
                  sstart = first.sstart, sstop = first.sstop }
  for k = j - 1, i, -1 do
    table.remove(m, k)
  end
  table.insert(m, i, entry)
  return entry, merged
end

---Takes window [start, stop) of key id kid out of the set (its cleanup, or a late merge).
function M.retire(sets, kid, start, stop)
  local m = sets[kid]
  local i = m and find_entry(m, start, stop)
  if i then
    table.remove(m, i)
    if #m == 0 then
      sets[kid] = nil
    end
  end
end

---The in-flight entries of key id kid, sorted by start (for inspection; do not change them).
function M.entries(sets, kid)
  return sets[kid] or {}
end

return M
