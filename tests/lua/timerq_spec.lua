-- Specs for weir.timerq, the fast window operator's timer queue: on random registrations it
-- gives its entries in (time, registration) order, and counts and peeks as it goes; add_at
-- gives each entry's place in its bucket, also across the bucket it remembers and its pop (add
-- is add_at: the tumbling windows' registrations use the remembered bucket too).
local spec = require("spec")
local timerq = require("weir.timerq")
local it, eq = spec.it, spec.eq

---Takes every entry due at or before w, as the operator's watermark loop does.
local function take_upto(q, w, out)
  while q.n > 0 and q.times[1] <= w do
    local t = q.times[1]
    local b = q.buckets[t]
    while b.head <= b.len do
      out[#out + 1] = { t, b[b.head] }
      b.head = b.head + 1
      q.count = q.count - 1
    end
    timerq.pop(q)
  end
  return out
end

it("an empty queue has no next time", function()
  local q = timerq.new()
  eq(timerq.next(q), math.huge)
  eq(q.count, 0)
  eq(take_upto(q, math.huge, {}), {})
end)

it("entries come in (time, registration) order", function()
  local q = timerq.new()
  timerq.add(q, 20, 1)
  timerq.add(q, 10, 2)
  timerq.add(q, 20, -3)
  timerq.add(q, 10, 4)
  timerq.add(q, -5, 5)
  eq(q.count, 5)
  eq(timerq.next(q), -5)
  eq(take_upto(q, 10, {}), { { -5, 5 }, { 10, 2 }, { 10, 4 } })
  eq(q.count, 2)
  eq(timerq.next(q), 20)
  eq(take_upto(q, 19, {}), {})
  eq(take_upto(q, 20, {}), { { 20, 1 }, { 20, -3 } })
  eq(timerq.next(q), math.huge)
end)

it("random registrations and watermarks match a sorted reference", function()
  math.randomseed(13)
  for _ = 1, 50 do
    local q, ref, got, want, seq = timerq.new(), {}, {}, {}, 0
    local w = -100
    for _ = 1, 300 do
      if math.random() < 0.2 then
        w = w + math.random(0, 30)
        take_upto(q, w, got)
        table.sort(ref, function(a, b)
          if a[1] ~= b[1] then return a[1] < b[1] end
          return a[3] < b[3]
        end)
        local keep = {}
        for _, r in ipairs(ref) do
          if r[1] <= w then want[#want + 1] = { r[1], r[2] } else keep[#keep + 1] = r end
        end
        ref = keep
        eq(q.count, #ref)
      else
        local t = w + math.random(1, 60) -- a timer is registered after the watermark
        seq = seq + 1
        local e = math.random(1, 9) * (math.random() < 0.5 and -1 or 1)
        timerq.add(q, t, e)
        ref[#ref + 1] = { t, e, seq }
        local low = math.huge
        for _, r in ipairs(ref) do low = math.min(low, r[1]) end
        eq(timerq.next(q), low)
      end
    end
    take_upto(q, math.huge, got)
    table.sort(ref, function(a, b)
      if a[1] ~= b[1] then return a[1] < b[1] end
      return a[3] < b[3]
    end)
    for _, r in ipairs(ref) do want[#want + 1] = { r[1], r[2] } end
    eq(got, want)
    eq(q.count, 0)
  end
end)

it("add_at returns each entry's place in its time's bucket", function()
  local q = timerq.new()
  eq(timerq.add_at(q, 20, 1), 1)
  eq(timerq.add_at(q, 20, 2), 2) -- the remembered bucket
  eq(timerq.add_at(q, 10, 3), 1)
  eq(timerq.add_at(q, 20, 4), 3) -- found again by its time
  timerq.add(q, 10, 5)
  eq(timerq.add_at(q, 10, 6), 3)
  eq(q.count, 6)
  eq(q.buckets[20][3], 4)
  eq(take_upto(q, 10, {}), { { 10, 3 }, { 10, 5 }, { 10, 6 } })
  -- the remembered bucket (10's) was popped: a timer at 10 again gets a bucket of its own
  eq(timerq.add_at(q, 10, 7), 1)
  eq(timerq.next(q), 10)
  eq(take_upto(q, math.huge, {}), { { 10, 7 }, { 20, 1 }, { 20, 2 }, { 20, 4 } })
  eq(q.count, 0)
end)

it("add_at and add mixed at random match a sorted reference, places included", function()
  math.randomseed(17)
  for _ = 1, 30 do
    local q, ref, got, want, seq = timerq.new(), {}, {}, {}, 0
    local w = 0
    for _ = 1, 200 do
      if math.random() < 0.15 then
        w = w + math.random(0, 20)
        take_upto(q, w, got)
        local keep = {}
        table.sort(ref, function(a, b)
          if a[1] ~= b[1] then return a[1] < b[1] end
          return a[3] < b[3]
        end)
        for _, r in ipairs(ref) do
          if r[1] <= w then want[#want + 1] = { r[1], r[2] } else keep[#keep + 1] = r end
        end
        ref = keep
      else
        local t = w + math.random(1, 4) * 10 -- few times: runs at one time, and switches
        seq = seq + 1
        local e = seq
        if math.random() < 0.7 then
          local i = timerq.add_at(q, t, e)
          eq(q.buckets[t][i], e)
          eq(q.buckets[t].len, i)
        else
          timerq.add(q, t, e)
        end
        ref[#ref + 1] = { t, e, seq }
      end
      eq(q.count, #ref)
    end
    take_upto(q, math.huge, got)
    table.sort(ref, function(a, b)
      if a[1] ~= b[1] then return a[1] < b[1] end
      return a[3] < b[3]
    end)
    for _, r in ipairs(ref) do want[#want + 1] = { r[1], r[2] } end
    eq(got, want)
  end
end)

it("add finds a run's bucket by the time it last added to, also across pops and reuse", function()
  local q = timerq.new()
  timerq.add(q, 10, 1)
  timerq.add(q, 10, 2)
  eq(q.at, 10)
  timerq.add(q, 20, 3) -- another time: its own bucket, remembered now
  eq(q.at, 20)
  eq(take_upto(q, 10, {}), { { 10, 1 }, { 10, 2 } })
  eq(q.at, 20) -- 10's pop leaves 20 remembered; 10's bucket is the spare
  timerq.add(q, 20, 4)
  timerq.add(q, 30, 5) -- a new time takes the spare bucket, emptied
  timerq.add(q, 30, 6)
  eq(q.buckets[30].head, 1)
  eq(q.buckets[30].len, 2)
  eq(take_upto(q, 20, {}), { { 20, 3 }, { 20, 4 } })
  timerq.add(q, 30, 7)
  eq(take_upto(q, 30, {}), { { 30, 5 }, { 30, 6 }, { 30, 7 } })
  eq(q.at ~= q.at, true) -- the remembered time went with its pop (NaN: none)
  timerq.add(q, 30, 8) -- a popped time again: a bucket of its own
  eq(take_upto(q, math.huge, {}), { { 30, 8 } })
  eq(q.count, 0)
end)

it("a watermark's popped buckets are all reused by the next times, their old entries unseen",
  function()
    local q = timerq.new()
    local old = {}
    for t = 1, 20 do -- 20 times of 3 entries: more than the spares kept (16)
      for e = 1, 3 do
        timerq.add(q, t * 10, t * 100 + e)
      end
      old[q.buckets[t * 10]] = true
    end
    eq(#take_upto(q, 200, {}), 60) -- one watermark pops every time
    eq(q.n_spare, 16)
    local reused, want = 0, {}
    for t = 21, 40 do
      eq(timerq.add_at(q, t * 10, -t), 1) -- a reused bucket starts empty: place 1
      want[#want + 1] = { t * 10, -t }
      reused = reused + (old[q.buckets[t * 10]] and 1 or 0)
    end
    eq(reused, 16)
    eq(q.n_spare, 0)
    eq(take_upto(q, math.huge, {}), want)
    eq(q.count, 0)
  end)

it("bucket_sized takes a kept bucket before it makes one", function()
  local q = timerq.new()
  local b = timerq.bucket_sized(q, 10, 100)
  for e = 1, 3 do
    b.len, b[e] = e, e
  end
  q.count = 3
  eq(#take_upto(q, 10, {}), 3)
  eq(q.n_spare, 1)
  local again = timerq.bucket_sized(q, 20, 100)
  eq(again == b, true)
  eq({ again.head, again.len, q.n_spare }, { 1, 0, 0 })
  eq(timerq.bucket_sized(q, 30, 100) == b, false) -- none kept: a new one
end)

it("grow moves a bucket into one of twice the room, in its place and add_at's", function()
  local q = timerq.new()
  local b = timerq.bucket_sized(q, 10, 4)
  eq(b.cap, 4)
  for e = 1, 4 do
    b.len, b[e] = e, e
  end
  q.count = 4
  b.head = 2 -- one taken
  timerq.add_at(q, 10, 5) -- add_at remembers the bucket of time 10
  local g = timerq.grow(q, 10, b)
  eq({ g == b, q.buckets[10] == g, g.head, g.len, g.cap }, { false, true, 2, 5, 16 })
  eq(timerq.add_at(q, 10, 6), 6) -- into the grown bucket
  eq(timerq.grow(q, 10, g).cap, 32)
  q.count = q.count - 1 -- the entry taken above
  eq(take_upto(q, 10, {}), { { 10, 2 }, { 10, 3 }, { 10, 4 }, { 10, 5 }, { 10, 6 } })
  -- a kept bucket says the room it had: the most it held, or the room it was given
  local kept = timerq.bucket_sized(q, 20, 0)
  eq({ kept.cap, kept.len }, { 32, 0 })
end)

spec.finish()
