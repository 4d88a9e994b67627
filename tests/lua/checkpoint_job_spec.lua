-- Specs for weir.checkpoint_job: the non-window parts of a job survive a stop with a savepoint
-- and a restore (rich functions' snapshot_state/restore_state, rebalance counters, watermark
-- generators and emitters, operator watermarks, collect, source positions, the virtual
-- clock), and a restore refuses a job that does not match the checkpoint, naming what.
local spec = require("spec")
local ckjob = require("lib.ckjob")
local tmpdir, env_with, stop_now = ckjob.tmpdir, ckjob.env_with, ckjob.stop_now
local weir = require("weir")
local watermarks = require("weir.watermarks")
local it, eq, raises = spec.it, spec.eq, spec.raises

-- The job: generate -> rich map (a counter it keeps through its hooks) -> rebalance -> map at
-- parallelism 2 (tagged with its subtask) -> collect. stop_at: stop the run at that index.
local function counting_job(opts, stop_at)
  local env = env_with(opts)
  local out = env:generate(function(i)
    if i == stop_at then
      stop_now(env)
    end
    return i
  end, { count = 5000 })
    :map({
      n = 0,
      map = function(self, i)
        self.n = self.n + 1
        return i .. "#" .. self.n
      end,
      snapshot_state = function(self) return self.n end,
      restore_state = function(self, values) self.n = values[1] end,
    }):uid("counter")
    :rebalance()
    :map({ open = function(self, ctx) self.st = ctx:subtask_index() end,
           map = function(self, v) return v .. "@" .. self.st end })
    :set_parallelism(2):uid("tag")
    :collect():uid("out")
  env:execute()
  return out:values()
end

it("a savepoint and a restore continue rich state, rebalance counters and collect", function()
  local want = counting_job(nil, nil)
  local dir = tmpdir()
  local first = counting_job({ checkpoint_dir = dir }, 2100)
  assert(#first < #want, "the stop came before the end")
  local entries = require("weir.checkpoint").list(dir)
  local sp = entries[#entries]
  eq(sp.savepoint, true)
  local got = counting_job({ checkpoint_dir = dir }, nil)
  eq(#got, #want)
  eq(got, want)
  os.execute("rm -rf " .. dir)
end)

-- Rescale: a rich function at another parallelism gets the old subtasks' values dealt round
-- robin (old i to new i % p), in order, maybe none; a changed max parallelism is refused.
local function rescale_job(opts, p, stop_at, got)
  local env = env_with(opts)
  local out = env:generate(function(i)
    if i == stop_at then
      stop_now(env)
    end
    return i
  end, { count = 5000 })
    :rebalance()
    :map({
      open = function(self, ctx) self.st = ctx:subtask_index() end,
      map = function(self, i)
        self.n = (self.n or 0) + 1
        return i
      end,
      snapshot_state = function(self) return { st = self.st, n = self.n } end,
      restore_state = function(_, values)
        local seen = {}
        for _, v in ipairs(values) do
          seen[#seen + 1] = v.st
        end
        got[#got + 1] = table.concat(seen, ",")
      end,
    }):set_parallelism(p):uid("counter")
    :collect():uid("out")
  env:execute()
  return out:values()
end

it("at another parallelism restore_state gets the old subtasks' values round robin", function()
  local dir = tmpdir()
  rescale_job({ checkpoint_dir = dir }, 2, 1500, {})
  local entries = require("weir.checkpoint").list(dir)
  local sp = entries[#entries].path
  for p, want in pairs({ [1] = { "0,1" }, [3] = { "0", "1", "" }, [2] = { "0", "1" } }) do
    local got = {}
    local values = rescale_job({ restore = sp }, p, nil, got)
    eq(got, want)
    local seen = {}
    for _, v in ipairs(values) do
      assert(not seen[v], "a record twice after the rescale: " .. v)
      seen[v] = true
    end
    eq(seen[1501] or seen[5000], true)
  end
  -- max parallelism: key groups are fixed
  local function keyed(opts, env_opts)
    local env = env_with(opts, env_opts)
    env:generate(function(i)
      if i == 1500 and not opts.restore then
        stop_now(env)
      end
      return i
    end, { count = 5000 })
      :key_by(function(v) return v % 7 end):sum(1):set_parallelism(2):uid("sums")
      :collect():uid("out")
    env:execute()
  end
  local kdir = tmpdir()
  keyed({ checkpoint_dir = kdir })
  local kentries = require("weir.checkpoint").list(kdir)
  raises(function() keyed({ restore = kentries[#kentries].path }, { max_parallelism = 64 }) end,
    "max parallelism 128 in the checkpoint, 64 now (key groups are fixed)")
  os.execute("rm -rf " .. kdir)
  os.execute("rm -rf " .. dir)
end)

it("a restore refuses state of a removed operator unless told to drop it", function()
  local dir = tmpdir()
  counting_job({ checkpoint_dir = dir }, 1500)
  local function job(allow)
    local env = env_with({ checkpoint_dir = dir, allow_non_restored_state = allow })
    local out = env:generate(function(i) return i end, { count = 5000 })
      :rebalance():map(function(v) return v end):set_parallelism(2):uid("tag")
      :collect():uid("out")
    env:execute()
    return out:values()
  end
  raises(function() job(false) end, "it holds state of operator counter",
    "--allow-non-restored-state drops it")
  eq(#job(true) > 0, true)
  os.execute("rm -rf " .. dir)
end)

-- A custom watermark generator that emits on every event; a process function reports the
-- watermark it sees. Both go through the restore.
local function watermark_job(opts, stop_at)
  local env = env_with(opts, { auto_watermark_interval = 0 })
  local strategy = weir.watermarks.custom({
    seen = 0,
    on_event = function(self, _, ts, out)
      self.seen = self.seen + 1
      out:emit_watermark(ts - 10 * (self.seen % 3))
    end,
  }):with_timestamp_assigner(function(v) return v * 2 end)
  local out = env:generate(function(i)
    if i == stop_at then
      stop_now(env)
    end
    return i
  end, { count = 3000 })
    :assign_timestamps_and_watermarks(strategy)
    :process(function(v, ctx, emit) emit(v .. ":" .. ctx:current_watermark()) end)
    :collect()
  env:execute()
  return out:values()
end

it("watermark generators, emitters and operator watermarks survive a restore", function()
  local want = watermark_job(nil, nil)
  local dir = tmpdir()
  watermark_job({ checkpoint_dir = dir }, 1700)
  eq(watermark_job({ checkpoint_dir = dir }, nil), want)
  os.execute("rm -rf " .. dir)
end)

-- Rescale and watermarks: generate -> rebalance -> timestamps at parallelism p (even records
-- to subtask 0, odd to 1: subtask 0's watermark is the higher one) -> a keyed process (hash:
-- one valve channel per timestamps subtask) and a forward process, each reporting the
-- watermark it sees first.
local function rescale_wm_job(opts, p, stop_at)
  local env = env_with(opts, { auto_watermark_interval = 0 })
  local strategy = weir.watermarks.custom({
    on_event = function(_, _, ts, out) out:emit_watermark(ts) end,
  }):with_timestamp_assigner(function(v)
    return v % 2 == 0 and v + 1000 or v
  end)
  local first = {}
  local ts = env:generate(function(i)
    if i == stop_at then
      stop_now(env)
    end
    return i
  end, { count = 5000 })
    :rebalance():assign_timestamps_and_watermarks(strategy):set_parallelism(p):uid("ts")
  local function reporter(name)
    return {
      open = function(self, rt) self.k = name .. rt:subtask_index() end,
      process = function(self, _, ctx)
        first[self.k] = first[self.k] or ctx:current_watermark()
      end,
    }
  end
  ts:process(reporter("fwd")):set_parallelism(p):uid("fwd")
  ts:key_by(function(v) return v % 5 end):process(reporter("keyed")):set_parallelism(p)
    :uid("keyed")
  env:execute()
  return first
end

it("at another parallelism a subtask's watermark is the minimum of what it inherits", function()
  local dir = tmpdir()
  local stopped = rescale_wm_job({ checkpoint_dir = dir }, 2, 1500)
  eq(stopped.fwd0, -math.huge) -- before the first record: nothing yet
  local sp = require("weir.checkpoint").list(dir)
  sp = sp[#sp].path
  local _, sections = require("weir.checkpoint").read(sp)
  local wm = {}
  for _, s in ipairs(sections) do
    if s.name == "op/ts" or s.name == "op/fwd" or s.name == "op/keyed" then
      wm[s.name] = { s.value.subtasks[1].watermark, s.value.subtasks[2].watermark }
    end
  end
  local w0, w1 = wm["op/ts"][1], wm["op/ts"][2]
  assert(w0 > w1 and w1 > 1000, "subtask 0's watermark is above subtask 1's")
  local low = math.min(w0, w1)
  -- unchanged parallelism: each subtask its own
  local same = rescale_wm_job({ restore = sp }, 2)
  eq(same.fwd0, wm["op/fwd"][1])
  eq(same.fwd1, wm["op/fwd"][2])
  -- 1 and 3: every subtask inherits both old ones (the valve channels too): the minimum. At 3
  -- a keyed subtask's first record may come after the first watermarks of the new run, which
  -- move it no further than the lowest of them (the first record of each new subtask: 2048,
  -- 2049, 2050 at times 3048, 2049, 3050)
  for _, p in ipairs({ 1, 3 }) do
    local got = rescale_wm_job({ restore = sp }, p)
    for st = 0, p - 1 do
      eq(got["fwd" .. st], low)
      local k = got["keyed" .. st]
      assert(p == 3 or k == low, ("p=%d keyed subtask %d: %s, want %s"):format(p, st,
        tostring(k), low))
      assert(k == nil or (k >= low and k <= 2049), ("p=%d keyed subtask %d: watermark %s")
        :format(p, st, tostring(k)))
    end
  end
  os.execute("rm -rf " .. dir)
end)

it("the built-in generators' state round-trips, idleness shifted by the downtime", function()
  local now = 1000
  local genv = { now = function() return now end, arrival = function() return now end,
                 quiet = function() return true end }
  local s = weir.watermarks.bounded_out_of_orderness(50):with_idleness(300)
    :with_idle_advance(500)
  local a = watermarks.generator(s, genv)
  a:on_event(1, 4000, { current = -math.huge })
  local sink = { current = -math.huge, emit_watermark = function() end,
                 mark_idle = function() end }
  now = 1200
  a:on_periodic_emit(sink)
  now = 1400
  a:on_periodic_emit(sink) -- quiet since 1400
  local snap = watermarks.snapshot_generator(a)
  local b = watermarks.generator(s, genv)
  watermarks.restore_generator(b, snap, 5000)
  eq(b.inner.inner.max_ts, 4000)
  eq(b.counter, a.counter)
  eq(b.quiet_since, a.quiet_since + 5000)
  eq(b.inner.last, a.inner.last + 5000)
  local other = watermarks.generator(weir.watermarks.monotonous(), genv)
  raises(function() watermarks.restore_generator(other, snap, 0) end,
    "the watermark strategy changed (idle in the checkpoint, bounded now)")
end)

it("a replay restored from a savepoint continues on the same virtual clock", function()
  local dir = tmpdir()
  local replay = dir .. "/in.replay"
  local fh = assert(io.open(replay, "wb"))
  for i = 1, 400 do
    fh:write(("+%dms r%d\n"):format(i == 1 and 0 or 5, i))
    if i % 100 == 0 then
      fh:write("+1s\n") -- only time
    end
  end
  fh:close()
  local function job(opts, stop_at)
    local env = env_with(opts)
    local out = env:replay(replay):map(function(l)
      if l == stop_at then
        stop_now(env)
      end
      return l
    end):process(function(v, ctx, emit) emit(v .. "@" .. ctx:current_processing_time()) end)
      :collect()
    env:execute()
    return out:values()
  end
  local want = job(nil, nil)
  job({ checkpoint_dir = dir .. "/ck" }, "r150")
  local got = job({ checkpoint_dir = dir .. "/ck" }, nil)
  eq(got, want)
  os.execute("rm -rf " .. dir)
end)

it("write_text into a directory keeps each file's committed length across a restore", function()
  local dir = tmpdir()
  local function job(out, opts, stop_at)
    local env = env_with(opts)
    env:generate(function(i)
      if i == stop_at then
        stop_now(env)
      end
      return i
    end, { count = 6000 })
      :rebalance():map(function(i) return ("v%d"):format(i) end):set_parallelism(2)
      :write_text(out):set_parallelism(2)
    env:execute()
  end
  local function read(path)
    local fh = assert(io.open(path, "rb"))
    local text = fh:read("*a")
    fh:close()
    return text
  end
  job(dir .. "/want", nil, nil)
  job(dir .. "/got", { checkpoint_dir = dir .. "/ck", checkpoint_interval = "0" }, 2500)
  -- a tail written after the savepoint, as a crash would leave it: cut by the restore
  local fh = assert(io.open(dir .. "/got/2", "ab"))
  fh:write("not committed\n")
  fh:close()
  job(dir .. "/got", { checkpoint_dir = dir .. "/ck" }, nil)
  eq(read(dir .. "/got/1"), read(dir .. "/want/1"))
  eq(read(dir .. "/got/2"), read(dir .. "/want/2"))
  os.execute("rm -rf " .. dir)
end)

it("a checkpoint refuses a value it cannot keep, naming the operator's section", function()
  local dir = tmpdir()
  local env = env_with({ checkpoint_dir = dir, checkpoint_interval = "0" })
  env:generate(function(i) return i end, { count = 3000 })
    :map({ map = function(_, i) return i end,
           snapshot_state = function() return { f = print } end,
           restore_state = function() end })
    :collect()
  raises(function() env:execute() end, "checkpoint 2: section op/map-1", "is a function")
  os.execute("rm -rf " .. dir)
end)

spec.finish()
