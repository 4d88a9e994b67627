-- Specs for keyed state and timers in checkpoints (weir.keyed's snapshot_groups and
-- restore_groups, the keyed/<uid> part of weir.checkpoint_parts): every state kind with and
-- without TTL, rolling aggregates and timers of both domains survive a savepoint and a restore
-- (on a replay's virtual clock, so TTL expiry and processing time go on exactly); equal-time
-- timers fire in registration order after a restore; a restore at another parallelism gives
-- each key group to the subtask that owns it now; a changed state is refused, naming it.
local spec = require("spec")
local ckjob = require("lib.ckjob")
local tmpdir, env_with, stop_now, newest = ckjob.tmpdir, ckjob.env_with, ckjob.stop_now,
  ckjob.newest
local weir = require("weir")
local C = require("weir.ffi")
local checkpoint = require("weir.checkpoint")
local it, eq, raises = spec.it, spec.eq, spec.raises

-- A replay of 3 keys over 40 s of processing time, one record a second.
local function replay_file()
  local lines = { "@0 a 1" }
  for i = 2, 40 do
    lines[#lines + 1] = ("+1s %s %d"):format(({ "a", "b", "c" })[i % 3 + 1], i)
  end
  local path = os.tmpname()
  local fh = assert(io.open(path, "wb"))
  fh:write(table.concat(lines, "\n"), "\n")
  fh:close()
  return path
end

-- Every state kind, two with a TTL of 5 s, a processing-time timer 3 s after each record of a
-- key (deleted and registered again), an event-time timer per record, and a rolling sum.
-- Every record prints what its key's state was; stop_at: stop after that record.
local function state_job(opts, path, stop_at, p)
  local env = env_with(opts)
  local records = env:replay(path):map(function(l)
    local k, n = l:match("(%a) (%d+)")
    n = tonumber(n)
    if n == stop_at then
      stop_now(env)
    end
    return { k, n }
  end):uid("parse"):set_parallelism(1)
    :assign_timestamps_and_watermarks(weir.watermarks.custom{
      on_event = function(_, _, ts, out) out:emit_watermark(ts - 10) end,
    }:with_timestamp_assigner(function(v) return v[2] end)):uid("ts"):set_parallelism(1)
  local keyed = records:key_by(function(v) return v[1] end)
  local out = keyed:process({
    open = function(self, rt)
      self.count = rt:value_state("count")
      self.seen = rt:value_state("seen", { ttl = "5s" })
      self.list = rt:list_state("list", { ttl = "5s" })
      self.map = rt:map_state("map")
      self.sum = rt:reducing_state("sum", function(a, b) return a + b end)
      self.avg = rt:aggregating_state("avg", {
        create = function() return { s = 0, n = 0 } end,
        add = function(v, acc) return { s = acc.s + v, n = acc.n + 1 } end,
        result = function(acc) return acc.s / acc.n end,
      })
      self.last = rt:value_state("last")
    end,
    process = function(self, v, ctx, out)
      local m = {}
      for k, x in self.map:pairs() do
        m[#m + 1] = k .. "=" .. x
      end
      table.sort(m)
      out(("%s %d: count=%s seen=%s list=%s map=%s sum=%s avg=%s"):format(v[1], v[2],
        tostring(self.count:value()), tostring(self.seen:value()),
        table.concat(self.list:get(), ","), table.concat(m, ","), tostring(self.sum:get()),
        tostring(self.avg:get())))
      self.count:update((self.count:value() or 0) + 1)
      self.seen:update("at " .. v[2])
      self.list:add(v[2])
      self.map:put("m" .. v[2] % 4, v[2])
      self.sum:add(v[2])
      self.avg:add(v[2])
      local ts = ctx:timer_service()
      local last = self.last:value()
      if last then
        ts:delete_processing_time_timer(last)
      end
      local t = ts:current_processing_time() + 3000
      ts:register_processing_time_timer(t)
      self.last:update(t)
      ts:register_event_time_timer(v[2] + 2)
    end,
    on_timer = function(self, t, ctx, out)
      out(("%s %s %d: count=%s list=%s"):format(ctx:current_key(), ctx:time_domain(), t,
        tostring(self.count:value()), table.concat(self.list:get(), ",")))
    end,
  }):uid("proc"):set_parallelism(p or 1):collect():uid("out")
  local sums = keyed:sum(2):uid("rsum"):set_parallelism(p or 1):map(function(v)
    return v[1] .. "=" .. v[2]
  end):uid("fmt"):set_parallelism(1):collect():uid("sums")
  env:execute()
  return out:values(), sums:values()
end

local function sorted(t)
  local c = {}
  for i, v in ipairs(t) do
    c[i] = v
  end
  table.sort(c)
  return c
end

it("every state kind, TTL, timers and a rolling sum go on after a restore", function()
  local path = replay_file()
  local want, want_sums = state_job(nil, path)
  local dir = tmpdir()
  local first = state_job({ checkpoint_dir = dir }, path, 20)
  assert(#first > 10 and #first < #want, "the stop came in the middle: " .. #first)
  local sp = newest(dir)
  eq(sp.savepoint, true)
  local _, sections = checkpoint.read(sp.path)
  local groups = 0
  for _, s in ipairs(sections) do
    if s.name == "keyed/proc" or s.name == "keyed/rsum" then
      groups = groups + 1
      assert(s.key_group >= 0, "a keyed section has its key group")
    end
  end
  eq(groups, 6) -- a, b, c: three key groups in each operator
  local got, got_sums = state_job({ restore = sp.path }, path)
  eq(got, want)
  eq(got_sums, want_sums)
  -- at another parallelism each key's state goes to its new subtask
  for _, p in ipairs({ 2, 3 }) do
    local rgot, rsums = state_job({ restore = sp.path }, path, nil, p)
    eq(sorted(rgot), sorted(want))
    eq(rsums, want_sums)
  end
  os.execute("rm -rf " .. dir)
  os.remove(path)
end)

it("a TTL'd state that expires during the restored run expires as it would have", function()
  -- key a's records at 0, 1, 2 s, then at 9 s: by then its 5 s TTL has run out
  local path = os.tmpname()
  local fh = assert(io.open(path, "wb"))
  local lines = { "@0 a 1", "+1s a 2", "+1s a 3" }
  for i = 4, 300 do
    lines[#lines + 1] = ("+10ms b %d"):format(i)
  end
  lines[#lines + 1] = "@9000 a 301"
  fh:write(table.concat(lines, "\n"), "\n")
  fh:close()
  local want = state_job(nil, path)
  local dir = tmpdir()
  state_job({ checkpoint_dir = dir }, path, 3)
  local got = state_job({ restore = newest(dir).path }, path)
  eq(got, want)
  local last
  for _, line in ipairs(got) do
    if line:match("^a 301") then
      last = line
    end
  end
  -- count has no TTL and stays; seen and list expired 5 s after their last write (at 2 s)
  eq(last, "a 301: count=3 seen=nil list= map=m1=1,m2=2,m3=3 sum=6 avg=2")
  os.execute("rm -rf " .. dir)
  os.remove(path)
end)

-- 37 keys seen in order 0..36; from record 2000 on each record registers an event-time and a
-- processing-time timer at the same time for its key, so the registration order is 2..36, 0, 1:
-- neither the key order, nor the order keys were first seen, nor the key groups' order.
local function timer_job(opts, stop_at, p)
  local env = env_with(opts)
  local fired = env:generate(function(i)
    if i == stop_at then
      stop_now(env)
    end
    return i
  end, { count = 5000 })
    :key_by(function(i) return i % 37 end)
    :process({
      process = function(_, i, ctx)
        if i >= 2000 then
          ctx:timer_service():register_event_time_timer(1000000)
          ctx:timer_service():register_processing_time_timer(2 ^ 50)
        end
      end,
      on_timer = function(_, _, ctx, out)
        out(ctx:time_domain():sub(1, 1) .. ctx:current_key())
      end,
    }):uid("timers"):set_parallelism(p or 1)
    :collect():uid("fired")
  env:execute()
  return fired:values()
end

it("equal-time timers fire in registration order after a restore", function()
  local order = {}
  for d, domain in ipairs({ "e", "p" }) do
    for k = 0, 36 do
      order[(d - 1) * 37 + k + 1] = domain .. (k + 2) % 37
    end
  end
  eq(timer_job(nil), order)
  local dir = tmpdir()
  local first = timer_job({ checkpoint_dir = dir }, 2500)
  eq(#first, 0) -- nothing fired before the stop
  local sp = newest(dir)
  eq(sp.savepoint, true)
  eq(timer_job({ restore = sp.path }), order)
  -- at another parallelism each subtask fires its keys in their registration order
  for _, p in ipairs({ 2, 4 }) do
    local got = timer_job({ restore = sp.path }, nil, p)
    eq(sorted(got), sorted(order))
    local pos = {}
    for i, x in ipairs(got) do
      pos[x] = i
    end
    local maxp = 128
    local keys = require("weir.keys")
    for d = 0, 1 do
      local last = {}
      for k = 1, 37 do
        local name = order[d * 37 + k]
        local key = tonumber(name:sub(2))
        local st = C.weir_keygroup_subtask(C.weir_keygroup_of(keys.java_hash(key), maxp), maxp, p)
        if last[st] then
          assert(pos[last[st]] < pos[name], ("p=%d: %s fired before %s"):format(p, name,
            last[st]))
        end
        last[st] = name
      end
    end
  end
  os.execute("rm -rf " .. dir)
end)

it("a restore refuses a state of another kind, or one open() no longer makes", function()
  local dir = tmpdir()
  local function job(opts, kind)
    local env = env_with(opts)
    env:generate(function(i)
      if i == 1500 and opts.checkpoint_dir then
        stop_now(env)
      end
      return i
    end, { count = 5000 })
      :key_by(function(i) return i % 3 end)
      :process({
        open = function(self, rt)
          if kind then
            self.s = rt[kind](rt, "s")
          end
        end,
        process = function(self, i)
          if kind == "value_state" then
            self.s:update(i)
          end
        end,
      }):uid("p"):collect():uid("out")
    env:execute()
  end
  job({ checkpoint_dir = dir }, "value_state")
  local sp = newest(dir).path
  raises(function() job({ restore = sp }, "list_state") end, "keyed_process (",
    "the state 's' is a value_state in the checkpoint, a list_state now")
  raises(function() job({ restore = sp }, nil) end,
    "the checkpoint holds its value_state 's', which open() no longer makes")
  job({ restore = sp, allow_non_restored_state = true }, nil) -- dropped with a warning
  os.execute("rm -rf " .. dir)
end)

spec.finish()
