-- weir.timerq: the fast window operator's timer queue (weir.aggwindow). Per time a FIFO of
-- entries (bucket), and a binary min-heap of the distinct times that have one. A watermark
-- closes a window of every key at the same time, so registering is an append and popping a
-- walk down an array; the order is (time, registration), as the C timer service's (timers.c).
-- The caller knows an entry is registered at most once per time (the fast operator registers
-- a window's timers when it creates the window), so there is no set check and no delete (the
-- Lua-trigger windows keep each entry's place, M.add_at, and skip the entries they deleted).
--
-- Layout, read directly by the operator's watermark loop (it walks a bucket in chunks):
--   q.times[1 .. q.n]  the heap of distinct times; q.times[1] the earliest
--   q.buckets[t]       { head, len, [head .. len] = entries not yet taken } for each time t
--   q.count            timers not yet taken, over all times
-- Taking an entry is b.head = b.head + 1 and q.count = q.count - 1; M.pop drops the earliest
-- time once its bucket is walked.
local M = {}

local INF = math.huge
local tnew = require("table.new")

local NAN = 0 / 0

-- q.at, q.at_b: the time M.add_at (M.add) last appended to and its bucket (NaN and false when
-- none or popped), so that a run of registrations at one time (every key's window of one time
-- range) finds its bucket without a hash lookup
function M.new()
  return { times = {}, n = 0, buckets = {}, count = 0, spares = {}, n_spare = 0, at = NAN,
           at_b = false }
end

-- Popped times' buckets are kept for the next new times (q.spares[1 .. q.n_spare], at most
-- SPARES): a bucket grows to the time's every entry (one per key), and a fresh one per time
-- was its array's doublings in garbage (about 5 bytes per timer in windows_typed). One spare
-- was not enough: a watermark that pops several times at once (a periodic watermark behind
-- fast input: several windows of every key) kept only the last, and the next times grew new
-- buckets. Only head .. len of a bucket is ever read.
local SPARES = 16
local function new_bucket(q)
  local n = q.n_spare
  if n > 0 then
    local b = q.spares[n]
    q.spares[n] = nil
    q.n_spare = n - 1
    b.head, b.len = 1, 0
    return b
  end
  return { head = 1, len = 0 }
end

-- The heap's sifts take one level per step, and their first levels are straight-line code:
-- the heap holds a few times (the windows pending per key: one for tumbling windows, size /
-- slide for sliding ones), so a loop over its levels made a loop of zero to two trips per
-- registration and per fire, which LuaJIT cannot trace well (a root trace that reaches it
-- aborts, "inner loop in root trace", and one that starts in it leaves it, "leaving loop in
-- root trace"). The loops that are left run only for heaps of more than 7 times (up) and 15
-- times (down).

-- One level up from i for time t: the parent's index when t moved above it, else 0 (t is
-- placed at i).
local function up_step(times, i, t)
  if i > 1 then
    local parent = (i - i % 2) / 2
    local p = times[parent]
    if p > t then
      times[i] = p
      return parent
    end
  end
  times[i] = t
  return 0
end

local function heap_push(q, t)
  local times, i = q.times, q.n + 1
  q.n = i
  -- a new time is usually the latest (a new window's end): placed at once
  i = up_step(times, i, t)
  if i == 0 then return end
  i = up_step(times, i, t)
  if i == 0 then return end
  i = up_step(times, i, t)
  while i ~= 0 do
    i = up_step(times, i, t)
  end
end

-- One level down from i of a heap of n times for time last: the child's index when it moved up
-- to i, else 0 (last is placed at i).
local function down_step(times, n, i, last)
  local c = 2 * i
  if c <= n then
    local ct = times[c]
    if c < n then
      local right = times[c + 1]
      if right < ct then
        c, ct = c + 1, right
      end
    end
    if ct < last then
      times[i] = ct
      return c
    end
  end
  times[i] = last
  return 0
end

local function heap_pop(q)
  local times, n = q.times, q.n
  local last = times[n]
  times[n] = nil
  n = n - 1
  q.n = n
  if n == 0 then return end
  local i = down_step(times, n, 1, last)
  if i == 0 then return end
  i = down_step(times, n, i, last)
  if i == 0 then return end
  i = down_step(times, n, i, last)
  if i == 0 then return end
  i = down_step(times, n, i, last)
  while i ~= 0 do
    i = down_step(times, n, i, last)
  end
end

---Registers a timer at t for entry e, and returns its index in t's bucket (its place:
---weir.aggwindow's Lua-trigger windows keep it to tell a live entry from a tombstone); the
---caller knows it is not registered yet. A run of registrations at one time (every key's new
---window of one period) finds its bucket by q.at, without a hash lookup.
function M.add_at(q, t, e)
  local b
  if t == q.at then
    b = q.at_b
  else
    b = q.buckets[t]
    if not b then
      b = new_bucket(q)
      q.buckets[t] = b
      heap_push(q, t)
    end
    q.at, q.at_b = t, b
  end
  local n = b.len + 1
  b[n] = e
  b.len = n
  q.count = q.count + 1
  return n
end

---Registers a timer at t for entry e as M.add_at (the tumbling windows' registration).
M.add = M.add_at

---The bucket of time t ({ head, len, [head .. len] = entries }), made and its time queued when
---absent: a caller registering many timers at one time appends them there itself (b[len + 1]
---= e, len + 1) and adds them to q.count.
function M.bucket(q, t)
  local b = q.buckets[t]
  if not b then
    b = new_bucket(q)
    q.buckets[t] = b
    heap_push(q, t)
  end
  return b
end

---M.bucket with room for n entries made up front when it is new and no popped bucket is kept
---(a caller that knows about how many timers the time gets, weir.aggwindow's sliced windows:
---the previous time's, saves the bucket's doublings as it fills; a kept one has grown already).
---Its b.cap says the room (a hint: a kept bucket's is the most it held); a caller appending
---past it calls M.grow.
function M.bucket_sized(q, t, n)
  local b = q.buckets[t]
  if not b then
    local s = q.n_spare
    if s > 0 then
      local kept = q.spares[s]
      local cap = kept.cap or kept.len
      if kept.len > cap then
        cap = kept.len
      end
      b = new_bucket(q)
      b.cap = cap
    else
      b = tnew(n, 3)
      b.head, b.len, b.cap = 1, 0, n
    end
    q.buckets[t] = b
    heap_push(q, t)
  end
  return b
end

---Bucket b of time t (M.bucket_sized's, full: b.len = b.cap) moved into one with twice the room,
---which takes its place and is returned. LuaJIT grows a table's array by rehashing it when an
---append finds no room, and a trace recorded before that keeps missing its array guard after:
---the sliced windows' first buckets (made with room for nothing, every key's first windows
---then appended) ran through a chain of side traces per append, ~6% of `sliding`'s
---instructions (bench/README.md, "Sliced sliding windows", seventh pass).
function M.grow(q, t, b)
  local cap = b.cap * 2
  if cap < 16 then
    cap = 16
  end
  local g = tnew(cap, 3)
  for i = b.head, b.len do
    g[i] = b[i]
  end
  g.head, g.len, g.cap = b.head, b.len, cap
  q.buckets[t] = g
  if q.at == t then
    q.at_b = g
  end
  return g
end
-- a bucket grows once per doubling: its copy loop is never a trace of its own (its callers
-- in aggwindow are jit.off too)
jit.off(M.grow)

---Drops the earliest time and its bucket (walked by the caller).
function M.pop(q)
  local t = q.times[1]
  local n = q.n_spare
  if n < SPARES then
    n = n + 1
    q.spares[n] = q.buckets[t]
    q.n_spare = n
  end
  q.buckets[t] = nil
  if t == q.at then
    q.at, q.at_b = NAN, false
  end
  heap_pop(q)
end

---The earliest time with a timer, or +inf (a bucket walked to its end counts until M.pop: the
---operator pops it at once).
function M.next(q)
  return q.n > 0 and q.times[1] or INF
end

return M
