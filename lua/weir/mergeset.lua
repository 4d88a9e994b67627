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

-- M.add's list of swallowed windows: copies of their entries, reused from one add to the next
-- (a merge is a record's common case in a session, and a table a record costs an allocation
-- and its collection). `pool` keeps the copies; `swallowed` lists the first n of them.
local pool, swallowed = {}, {}

local function swallow(m, i, n)
  for x = 1, n do
    local src, d = m[i + x - 1], pool[x]
    if not d then
      d = {}
      pool[x] = d
    end
    d.start, d.stop, d.sstart, d.sstop = src.start, src.stop, src.sstart, src.sstop
    swallowed[x] = d
  end
  for x = #swallowed, n + 1, -1 do
    swallowed[x] = nil
  end
  return swallowed
end

---MergingWindowSet.addWindow: the in-flight entry the new window [s, e) of key id kid ends in,
---and, when it merged, the list of the windows it swallowed as they were (the new entry is in
---the set, they are out), which the operator merges into it. The list and its entries are
---copies that the next M.add reuses: read them before it. The merge result is the first
---swallowed window's entry, widened (it keeps its state window): no entry is made.
function M.add(sets, kid, s, e)
  local m = sets[kid]
  if not m then
    m = {}
    sets[kid] = m
  end
  local n = #m
  local i = first_touching(m, s)
  local j = i
  while j <= n and m[j].start <= e do
    j = j + 1
  end
  if j == i then
    local entry = { start = s, stop = e, sstart = s, sstop = e }
    table.insert(m, i, entry)
    return entry
  end
  local first = m[i]
  local fstart, fstop = first.start, first.stop
  if j == i + 1 and fstart <= s and fstop >= e then
    return first -- inside an existing window: no merge
  end
  local k = j - i
  local merged = swallow(m, i, k)
  local last = m[j - 1].stop
  first.start = s < fstart and s or fstart
  first.stop = e > last and e or last
  if k > 1 then -- the others go: the entries after them move down
    for x = i + 1, n - k + 1 do
      m[x] = m[x + k - 1]
    end
    for x = n, n - k + 2, -1 do
      m[x] = nil
    end
  end
  return first, merged
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
