-- The floor of bench/sliding.lua's "lua" variant: the job's own code and nothing of weir's, in
-- one plain LuaJIT loop. Per event the generator's { key, ts } table, the timestamp extractor
-- and the key selector, and the aggregate's create (a new slice) and add; per fired window the
-- merges the two stacks of sliced windows need (about three: bench/README.md "Sliced sliding
-- windows"), result, the window function with its output table and the checksum sink. The
-- aggregate, the sink and the digest term are the job's own (bench/common.lua, loaded here);
-- the window function's context and window object are the cheapest there can be (one of each,
-- reused), since weir makes those. Windows fire in start order as the peer's do
-- (bench/peer/sliding.lua), once the watermark (largest timestamp - 1) reaches their end - 1:
-- the sink's checksum does not depend on the order. Prints the weir job's line; run with
-- Debian's luajit (bench/README.md "Floors"):
--
--   luajit bench/floor/sliding_lua.lua N
local here = arg[0]:match("^(.*)/floor/[^/]*$") or ".." -- bench/, also from bench/floor/
package.path = here .. "/?.lua;" .. package.path
-- bench/common.lua reads only weir.args (its record count) of the weir module
package.loaded.weir = { args = arg }
local common = require("common")

local KEYS, SLIDE_MS, K = 10000, 1000, 60 -- windows of K slides
local floor = math.floor
local n = common.record_count("bench/floor/sliding_lua.lua", "1000000")

-- the job's functions, as bench/sliding.lua writes them
local generate = function(i) return { i % KEYS, floor(i / 10) } end
local timestamp_of = function(e) return e[2] end
local key_selector = function(e) return e[1] end
local agg = common.count()
local create, add, merge, result = agg.create, agg.add, agg.merge, agg.result
local function digest_term(r)
  return (r.key + 1) * (r.start / SLIDE_MS + 60) * r.count
end
local window_fn = function(key, ctx, counts, out)
  out({ key = key, start = ctx:window().start, count = counts[1] })
end
local sink = common.checksum_sink(digest_term)
local sink_fn = sink.sink
sink.open(sink)
local function out(r)
  sink_fn(sink, r)
end
-- weir's part, made as cheap as it goes: one context, one window, one elements list
local win = { start = 0 }
local ctx = { window = function() return win end }
local counts = { 0 }

-- per key (0-based) the accumulators of its last K slices, acc[key * K + slice % K] (create()'s
-- value where it has none: weir's sliced windows need merge to have it for identity), whether
-- each is a slice (has: 1, else 0), how many slices it has (live), and its two stacks: the
-- front's suffix merges sfx[key * K + slice % K] for its slices up to fhi[key], the back's merge
-- of the later ones (back). No nil or false for "none": a slot that changes type throws the
-- loops out of their traces.
local ZERO = create()
local acc, has, sfx, live, fhi, back = {}, {}, {}, {}, {}, {}
for key = 0, KEYS - 1 do
  live[key], fhi[key], back[key] = 0, -1e300, ZERO
  for j = 0, K - 1 do
    acc[key * K + j], has[key * K + j], sfx[key * K + j] = ZERO, 0, ZERO
  end
end

-- window [s, s + K) slices of key: its accumulator off the two stacks, then the slice s dropped
local function fire(key, s)
  local base = key * K
  local b = back[key]
  if s > fhi[key] then -- the front ran out: this window's slices make the new one (K - 1 merges)
    local j = s + K - 1
    local m = acc[base + j % K]
    sfx[base + j % K] = m
    for i = j - 1, s, -1 do
      local r = base + i % K
      m = merge(acc[r], m)
      sfx[r] = m
    end
    fhi[key], b = j, ZERO
  else -- the window's last slice onto the back (one merge)
    b = merge(b, acc[base + (s + K - 1) % K])
  end
  back[key] = b
  local r = base + s % K
  counts[1] = result(merge(sfx[r], b)) -- one merge
  win.start = s * SLIDE_MS
  window_fn(key, ctx, counts, out)
  acc[r] = ZERO
  live[key] = live[key] - has[r] -- no branch: the first minute's windows start at no slice
  has[r] = 0
end

local next_s -- the start (in slides) of the next window to fire
local function fire_next()
  for key = 0, KEYS - 1 do
    if live[key] > 0 then
      fire(key, next_s)
    end
  end
  next_s = next_s + 1
end

local max_ts = -1
for i = 0, n - 1 do
  local e = generate(i)
  local ts, key = timestamp_of(e), key_selector(e)
  local s = floor(ts / SLIDE_MS)
  if not next_s then
    next_s = s - (K - 1)
  end
  if ts > max_ts then
    max_ts = ts
    while (next_s + K) * SLIDE_MS <= max_ts do
      fire_next()
    end
  end
  local r = key * K + s % K
  if has[r] == 0 then
    local l = live[key]
    if l == 0 then
      -- a key with no slice (new, or all of them dropped): the windows up to this slice's have
      -- only empty slices before it, a front of create()'s values. The fires of this job's
      -- first minute then go the way of all the others (the back), so the fire loop's trace is
      -- recorded on that way and the front's rebuild is its side trace, not the other way round.
      for j = 0, K - 1 do
        sfx[key * K + j] = ZERO
      end
      fhi[key], back[key] = s - 1, ZERO
    end
    acc[r], has[r] = create(), 1
    live[key] = l + 1
  end
  acc[r] = add(e, acc[r])
end
if next_s then
  while next_s <= floor(max_ts / SLIDE_MS) do
    fire_next()
  end
end
sink.close(sink)
