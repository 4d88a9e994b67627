-- Specs for weir.connect: a:connect(b) with co_map, co_flat_map and (both sides keyed)
-- co_process. The cases marked "Flink:" are ported from Flink's CoStreamMapTest,
-- CoStreamFlatMapTest and KeyedCoProcessOperatorTest with their inputs and expected outputs.
local spec = require("spec")
local weir = require("weir")
local it, eq, raises = spec.it, spec.eq, spec.raises

local function write(path, text)
  local fh = assert(io.open(path, "wb"))
  fh:write(text)
  fh:close()
end

-- Flink's TwoInputStreamOperatorTestHarness: steps {1, v, ts} / {2, v, ts} (processElement1/2)
-- and {"w1", t} / {"w2", t} (processWatermark1/2), step i at virtual time i. build(a, b) makes
-- the operator from the two timestamped inputs; returns what it emitted as "v@ts" and, per
-- record, the watermark the sink had then ("wm" = its current_watermark).
local function harness(steps, build)
  local lines = { {}, {} }
  for i, s in ipairs(steps) do
    local side, line
    if s[1] == "w1" or s[1] == "w2" then
      side, line = s[1] == "w1" and 1 or 2, ("@%d wm %d"):format(i, s[2])
    else
      side, line = s[1], ("@%d el %d %s"):format(i, s[3], tostring(s[2]))
    end
    table.insert(lines[side], line)
  end
  local paths = { os.tmpname(), os.tmpname() }
  for k = 1, 2 do
    -- both inputs last to the end (an input that ends sends +inf, as a finished source does)
    table.insert(lines[k], ("@%d end 0"):format(#steps + 1))
    write(paths[k], table.concat(lines[k], "\n") .. "\n")
  end
  local env = weir.env()
  local strategy = weir.watermarks.custom{
    on_event = function(_, v, _, out)
      local t = v:match("^wm (%-?%d+)$")
      if t then out:emit_watermark(tonumber(t)) end
    end,
  }:with_timestamp_assigner(function(v) return tonumber(v:match("^%a+ (%-?%d+)")) end)
  local function input(k)
    return env:replay(paths[k]):assign_timestamps_and_watermarks(strategy)
      :filter(function(v) return v:sub(1, 2) == "el" end)
      :map(function(v) return v:match("^el %-?%d+ (.*)$") end)
  end
  local got, wms = {}, {}
  build(input(1), input(2)):sink(function(v, ctx)
    got[#got + 1] = ("%s@%s"):format(tostring(v), tostring(ctx:timestamp()))
    wms[#wms + 1] = ctx:current_watermark()
  end)
  local ok, err = pcall(env.execute, env)
  os.remove(paths[1])
  os.remove(paths[2])
  if not ok then
    error(err, 0)
  end
  return got, wms
end

spec.describe("connect", function()
  local co_map_steps = {
    { 1, 1.1, 1 }, { 1, 1.2, 2 }, { 1, 1.3, 3 }, { "w1", 3 }, { 1, 1.4, 4 }, { 1, 1.5, 5 },
    { 2, 1, 1 }, { 2, 2, 2 }, { "w2", 2 }, { 2, 3, 3 }, { 2, 4, 4 }, { 2, 5, 5 } }

  it("Flink: CoStreamMapTest testCoMap (the watermark is the minimum of both inputs)", function()
    local got, wms = harness(co_map_steps, function(a, b)
      return a:connect(b):co_map{ map1 = function(_, v) return "d" .. v end,
                                  map2 = function(_, v) return "i" .. v end }
    end)
    eq(got, { "d1.1@1", "d1.2@2", "d1.3@3", "d1.4@4", "d1.5@5", "i1@1", "i2@2", "i3@3", "i4@4",
      "i5@5" })
    -- input 1's watermark 3 alone moves nothing; input 2's 2 makes it min(3, 2) = 2
    local INF = math.huge
    eq(wms, { -INF, -INF, -INF, -INF, -INF, -INF, -INF, 2, 2, 2 })
  end)

  it("Flink: CoStreamFlatMapTest testCoFlatMap (each character of a string)", function()
    local got, wms = harness({ { 1, "abc", 1 }, { 1, "def", 2 }, { "w1", 2 }, { 1, "ghi", 3 },
      { 2, 1, 1 }, { 2, 2, 2 }, { "w2", 3 }, { 2, 3, 3 }, { 2, 4, 4 }, { 2, 5, 5 } },
      function(a, b)
        return a:connect(b):co_flat_map{
          flat_map1 = function(_, v, out) for c in v:gmatch(".") do out(c) end end,
          flat_map2 = function(_, v, out) out(v) end }
      end)
    eq(got, { "a@1", "b@1", "c@1", "d@2", "e@2", "f@2", "g@3", "h@3", "i@3", "1@1", "2@2",
      "3@3", "4@4", "5@5" })
    -- the watermark min(2, 3) = 2 goes out after "2"
    local INF = math.huge
    eq(wms, { -INF, -INF, -INF, -INF, -INF, -INF, -INF, -INF, -INF, -INF, -INF, 2, 2, 2 })
  end)

  it("Flink: CoStreamMapTest testOpenClose (a rich co_map: open before, close after)", function()
    local log = {}
    harness({ { 1, 74, 0 }, { 2, 42, 0 } }, function(a, b)
      return a:connect(b):co_map{
        open = function(self) self.opened = true; log[#log + 1] = "open" end,
        close = function() log[#log + 1] = "close" end,
        map1 = function(self, v) assert(self.opened); log[#log + 1] = v; return v end,
        map2 = function(self, v) assert(self.opened); log[#log + 1] = v; return v end }
    end)
    eq(log, { "open", "74", "42", "close" })
  end)

  local function key_int(v) return tostring(tonumber(v)) end
  local function ident(v) return v end

  it("Flink: KeyedCoProcessOperatorTest testGetCurrentKey", function()
    local got = harness({ { 1, 5, 0 }, { 1, 6, 0 }, { 2, "hello", 0 }, { 2, "world", 0 } },
      function(a, b)
        return a:key_by(key_int):connect(b:key_by(ident)):co_process{
          process1 = function(_, v, ctx, out) out(v .. "," .. ctx:current_key()) end,
          process2 = function(_, v, ctx, out) out(v .. "," .. ctx:current_key()) end }
      end)
    eq(got, { "5,5@0", "6,6@0", "hello,hello@0", "world,world@0" })
  end)

  it("Flink: KeyedCoProcessOperatorTest testGetCurrentKeyFromTimers", function()
    local got = harness({ { 1, 17, 42 }, { 2, "18", 42 }, { "w1", 5 }, { "w2", 5 },
      { "w1", 6 }, { "w2", 6 } }, function(a, b)
      return a:key_by(key_int):connect(b:key_by(ident)):co_process{
        process1 = function(_, v, ctx, out)
          out("INPUT1:" .. v)
          ctx:timer_service():register_event_time_timer(5)
        end,
        process2 = function(_, v, ctx, out)
          out("INPUT2:" .. v)
          ctx:timer_service():register_event_time_timer(6)
        end,
        on_timer = function(_, _, ctx, out)
          assert(ctx:time_domain() == "event_time")
          out(ctx:current_key() .. ":1777")
        end }
    end)
    eq(got, { "INPUT1:17@42", "INPUT2:18@42", "17:1777@5", "18:1777@6" })
  end)

  it("event-time timers with state shared by both inputs, per key (the last ones fired by "
    .. "the end of input)", function()
    local got = harness({ { "w1", 1 }, { "w2", 1 }, { 1, 17, 0 }, { 1, 13, 0 }, { 2, "42", 0 },
      { "w1", 2 }, { "w2", 2 }, { "w1", 6 }, { "w2", 6 }, { 1, 13, 0 }, { 2, "42", 0 },
      { "w1", 7 }, { "w2", 7 } }, function(a, b)
      return a:key_by(key_int):connect(b:key_by(key_int)):co_process{
        open = function(self, rt) self.state = rt:value_state("seen") end,
        process1 = function(self, v, ctx, out)
          out("INPUT1:" .. v)
          self.state:update("STATE:" .. v)
          ctx:timer_service():register_event_time_timer(ctx:timer_service()
            :current_watermark() + 5)
        end,
        process2 = function(self, v, ctx, out)
          out("INPUT2:" .. v)
          self.state:update("STATE:" .. v)
          ctx:timer_service():register_event_time_timer(ctx:timer_service()
            :current_watermark() + 5)
        end,
        on_timer = function(self, _, _, out)
          out(self.state:value())
          self.state:clear()
        end }
    end)
    eq(got, { "INPUT1:17@0", "INPUT1:13@0", "INPUT2:42@0", "STATE:17@6", "STATE:13@6",
      "STATE:42@6", "INPUT1:13@0", "INPUT2:42@0", "STATE:13@11", "STATE:42@11" })
  end)

  it("a shared state: what input 1 wrote, input 2 reads for the same key", function()
    local got = harness({ { 1, "a", 0 }, { 2, "a", 1 }, { 2, "b", 2 } }, function(a, b)
      return a:key_by(ident):connect(b:key_by(ident)):co_process{
        open = function(self, rt) self.n = rt:value_state("n") end,
        process1 = function(self) self.n:update(7) end,
        process2 = function(self, v, _, out) out(v .. "=" .. tostring(self.n:value())) end }
    end)
    eq(got, { "a=7@1", "b=nil@2" })
  end)

  it("keyed co_process at parallelism 2: each key on one subtask, from either input", function()
    local env = weir.env{ parallelism = 2 }
    local a = env:from_elements("x", "y", "z", "x")
    local b = env:from_elements("y", "x", "z")
    local got = {}
    a:key_by(ident):connect(b:key_by(ident)):co_process{
      open = function(self, rt) self.st = rt:subtask_index(); self.n = rt:value_state("n") end,
      process1 = function(self) self.n:update((self.n:value() or 0) + 1) end,
      process2 = function(self, v, _, out)
        out(("%s %d %d"):format(v, self.n:value() or 0, self.st))
      end }:sink(function(v) got[#got + 1] = v end):set_parallelism(1)
    env:execute()
    table.sort(got)
    local st = {}
    for i, line in ipairs(got) do
      st[i] = line:match("^(%a+ %d)")
    end
    eq(st, { "x 2", "y 1", "z 1" })
  end)

  it("a failing co_map function names the operator and the record", function()
    local env = weir.env()
    env:from_elements(1):connect(env:from_elements(2)):co_map{
      map1 = function(_, v) return v end,
      map2 = function(_, v) error("boom " .. v) end }:sink(function() end)
    raises(function() env:execute() end, "co_map (", "connect_spec.lua:", "boom 2")
  end)

  it("rejects bad arguments naming the script line", function()
    local env = weir.env()
    local a, b = env:from_elements(1), env:from_elements(2)
    raises(function() a:connect(42) end, "connect_spec.lua:", "connect: expected a stream")
    local other = weir.env()
    raises(function() a:connect(other:from_elements(1)) end, "another environment")
    other.executed = true
    raises(function() a:connect(b):co_map{ map1 = function() end } end,
      "co_map: 'map2' must be a function (the table has no 'map2')")
    raises(function() a:connect(b):co_flat_map(function() end) end,
      "co_flat_map: expected a table { flat_map1, flat_map2 }")
    raises(function() a:connect(b):co_process{ process1 = print, process2 = print } end,
      "co_process: both inputs must be keyed streams")
    raises(function() a:connect(b):comap{} end, "ConnectedStreams has no method 'comap'")
    env.executed = true -- built only for its build errors
  end)
end)

spec.finish()
