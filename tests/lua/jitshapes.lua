-- jitshapes: one job shape run under a watch of LuaJIT's trace events, for jit_aborts_spec.lua.
--
--   weir run jitshapes.lua -- SHAPE DIR      runs SHAPE (see SHAPES), writes DIR/SHAPE.trace
--   weir run jitshapes.lua -- --list         prints the shape names
--
-- The report has one line per trace abort, per trace that falls back to the interpreter
-- (LuaJIT's end of a side exit that failed too often) and per trace compiled, tab-separated:
-- "abort", "fallback" or "trace", the trace's start ("(parent/exit) file:line" for a side
-- trace), the reason (empty for "trace"), where it happened (LuaJIT's file:line) and that
-- place's chunk name (the source of the Lua function the recorder was in; for a built-in, the
-- trace's start), the chunk name of the trace's start, and the first line of the Lua function
-- of the place (abort) or of the start (fallback, trace), empty when there is none.
-- This file's own functions are the shapes' user code.
local weir = require("weir")
local jutil = require("jit.util")
local vmdef = require("jit.vmdef")

local N = 40000 -- records per shape: enough for every hot path to compile and run warm
local KEYS = 50

local shape, dir = weir.args[1], weir.args[2]

-- Trace events --------------------------------------------------------------------------------

local function where(func, pc)
  local fi = jutil.funcinfo(func, pc)
  if fi.loc then
    return fi.loc, fi.source, fi.linedefined
  elseif fi.ffid then
    return vmdef.ffnames[fi.ffid], nil
  elseif fi.addr then
    return ("C:%x"):format(fi.addr), nil
  end
  return "(?)", nil
end

local function reason(code, info)
  if type(code) ~= "number" then
    return tostring(code)
  end
  if type(info) == "function" then
    info = where(info)
  end
  return (vmdef.traceerr[code]:format(info))
end

local events, starts = {}, {}

local function watch(what, tr, func, pc, otr, oex)
  if what == "start" then
    local loc, src, fn = where(func, pc)
    if otr then
      loc = ("(%d/%d) %s"):format(otr, oex, loc)
    end
    starts[tr] = { loc = loc, src = src, fn = fn }
  elseif what == "abort" then
    local s = starts[tr] or { loc = "?" }
    local loc, src, fn = where(func, pc)
    events[#events + 1] = { "abort", s.loc, reason(otr, oex), loc, src or s.src or "?",
      s.src or "?", fn or "" }
  elseif what == "stop" then
    local info = jutil.traceinfo(tr)
    local s = starts[tr] or { loc = "?" }
    if info and info.linktype == "interpreter" then
      events[#events + 1] = { "fallback", s.loc, "fallback to interpreter", s.loc, s.src or "?",
        s.src or "?", s.fn or "" }
    else -- a trace that compiled: the evidence for the spec's warm-up rule
      events[#events + 1] = { "trace", s.loc, "", s.loc, s.src or "?", s.src or "?", s.fn or "" }
    end
  end
end

-- Inputs --------------------------------------------------------------------------------------

local function write_file(name, n, line)
  local path = dir .. "/" .. name
  local fh = assert(io.open(path, "wb"))
  local parts = {}
  for i = 0, n - 1 do
    parts[#parts + 1] = line(i)
    if #parts == 1000 then
      fh:write(table.concat(parts, "\n"), "\n")
      parts = {}
    end
  end
  if #parts > 0 then
    fh:write(table.concat(parts, "\n"), "\n")
  end
  fh:close()
  return path
end

local function kv_line(i)
  return ("%d,%d"):format(i % KEYS, i)
end

local function kv_file()
  return write_file("kv.txt", N, kv_line)
end

-- a replay of N lines, one per millisecond of processing time
local function replay_file()
  return write_file("replay.txt", N, function(i)
    return (i == 0 and "@1000000 " or "+1ms ") .. kv_line(i)
  end)
end

-- User code -----------------------------------------------------------------------------------

local find, sub, tonumber = string.find, string.sub, tonumber

local function parse(line)
  local c = find(line, ",", 1, true)
  return { tonumber(sub(line, 1, c - 1)), tonumber(sub(line, c + 1)) }
end

local function event(i) return { i % KEYS, i } end
local function ev_key(e) return e[1] end
local function ev_ts(e) return e[2] end

local counting = {
  open = function(self) self.n, self.sum = 0, 0 end,
  sink = function(self, v)
    self.n = self.n + 1
    self.sum = self.sum + (type(v) == "number" and v or 1)
  end,
}

local count_agg = {
  create = function() return 0 end,
  add = function(_, c) return c + 1 end,
  result = function(c) return c end,
  merge = function(a, b) return a + b end,
}

local function count_fn(key, ctx, counts, out)
  out({ key = key, start = ctx:window().start, count = counts[1] })
end

local function sum_reduce(a, b) return { a[1], a[2] + b[2] } end

local function process_fn(key, ctx, elements, out)
  local n = 0
  for _ in ipairs(elements) do
    n = n + 1
  end
  out({ key = key, stop = ctx:window().stop, n = n })
end

local function apply_fn(key, window, elements, out)
  local n = 0
  for _ in ipairs(elements) do
    n = n + 1
  end
  out({ key = key, start = window.start, n = n })
end

-- The clock of the event-time shapes: virtual, so that their periodic ticks (every
-- auto_watermark_interval, 1 ms) fall at the same records in every run. On the real clock the
-- ticks were as many as the job took milliseconds: a loaded machine made the per-tick paths
-- (watermarks, stall checks, window fires) hot and traced where an idle one did not, so the
-- aborts seen depended on the load. A replay of one time line puts the job on the virtual
-- clock; the generators' rate then moves it: RATE records per second, RATE / 1000 per tick.
local RATE = 100000
local on_virtual = {}
local function virtual_clock(env)
  if not on_virtual[env] then
    on_virtual[env] = true
    local path = dir .. "/clock.replay"
    local fh = assert(io.open(path, "wb"))
    fh:write("@1000000\n")
    fh:close()
    env:replay(path):sink(counting)
  end
end

-- event-time events: key i % KEYS, timestamp i ms (sessions: a gap of 200 ms every 1,000), at
-- RATE per second of the virtual clock
local function timed(env, gaps)
  virtual_clock(env)
  local make = event
  if gaps then
    make = function(i) return { i % KEYS, i + math.floor(i / 1000) * 200 } end
  end
  return env:generate(make, { count = N, rate = RATE })
    :assign_timestamps_and_watermarks(
      weir.watermarks.bounded_out_of_orderness("5ms"):with_timestamp_assigner(ev_ts))
end

local W = weir.windows
local T = weir.triggers
local E = weir.evictors

-- windowed(assigner, fn_kind, opts): a keyed window job on timed events ending in a sink
local function windowed(assigner, fn_kind, opts)
  opts = opts or {}
  return function(env)
    local input = opts.input and opts.input(env) or timed(env, opts.gaps)
    local w = input:key_by(ev_key):window(assigner())
    if opts.trigger then
      w = w:trigger(opts.trigger())
    end
    if opts.evictor then
      w = w:evictor(opts.evictor())
    end
    if opts.lateness then
      w = w:allowed_lateness(opts.lateness)
    end
    local late
    if opts.late then
      late = weir.output_tag("late")
      w = w:side_output_late_data(late)
    end
    local out
    if fn_kind == "reduce" then
      out = w:reduce(sum_reduce)
    elseif fn_kind == "reduce_fn" then
      out = w:reduce(sum_reduce, function(key, ctx, rs, o)
        o({ key = key, start = ctx:window().start, v = rs[1][2] })
      end)
    elseif fn_kind == "aggregate" then
      out = w:aggregate(count_agg)
    elseif fn_kind == "aggregate_fn" then
      out = w:aggregate(count_agg, count_fn)
    elseif fn_kind == "builtin_count" then -- weir.aggregates: in C on tumbling windows
      out = w:aggregate(weir.aggregates.count())
    elseif fn_kind == "builtin_sum" then
      out = w:aggregate(weir.aggregates.sum(2))
    elseif fn_kind == "builtin_avg_fn" then
      out = w:aggregate(weir.aggregates.avg(2), count_fn)
    elseif fn_kind == "process" then
      out = w:process(process_fn)
    else
      out = w:apply(apply_fn)
    end
    out:sink(counting)
    if late then
      out:get_side_output(late):sink(counting)
    end
  end
end

local lua_event_time = function()
  return weir.trigger{
    name = "lua event_time",
    on_element = function(_, _, _, window, ctx)
      local m = window:max_timestamp()
      if m <= ctx:current_watermark() then
        return weir.FIRE
      end
      ctx:register_event_time_timer(m)
      return weir.CONTINUE
    end,
    on_event_time = function(_, time, window)
      return time == window:max_timestamp() and weir.FIRE or weir.CONTINUE
    end,
    on_merge = function(_, window, ctx)
      ctx:register_event_time_timer(window:max_timestamp())
    end,
    clear = function(_, window, ctx)
      ctx:delete_event_time_timer(window:max_timestamp())
    end,
  }
end

local function tumbling() return W.tumbling_event_time("1s") end
local function sliding() return W.sliding_event_time("2s", "500ms") end
local function session() return W.event_time_session("100ms") end
local function dyn_session()
  return W.dynamic_event_time_session(function(e) return e[1] % 2 == 0 and 100 or 150 end)
end
local function global() return W.global() end
local function tumbling_pt() return W.tumbling_processing_time("1s") end
local function sliding_pt() return W.sliding_processing_time("2s", "500ms") end
local function session_pt() return W.processing_time_session("100ms") end

-- processing time on the replay's virtual clock: one line per ms
local function replayed(env)
  return env:replay(replay_file()):map(parse)
end

-- Shapes --------------------------------------------------------------------------------------

local SHAPES, ORDER = {}, {}
local function shape_def(name, build, p)
  SHAPES[name] = { build = build, parallelism = p or 1 }
  ORDER[#ORDER + 1] = name
end

-- each source kind into a sink
shape_def("generate_sink", function(env)
  env:generate(function(i) return i end, { count = N }):sink(counting)
end)
shape_def("generate_rich_sink", function(env)
  env:generate({ generate = function(_, i) return i end }, { count = N }):sink(counting)
end)
shape_def("elements_sink", function(env)
  local t = {}
  for i = 1, N do
    t[i] = i
  end
  env:from_collection(t):sink(counting)
end)
shape_def("file_sink", function(env)
  env:read_text_file(kv_file()):sink(counting)
end)
shape_def("file_typed_sink", function(env)
  local ev = weir.record_type("ev", { "int32_t key", "double ts" })
  env:read_text_file(kv_file(), { record = ev }):map(function(e) return e.key end):sink(counting)
end)
shape_def("stdin_sink", function(env)
  env:stdin():sink(counting)
end)
shape_def("replay_sink", function(env)
  env:replay(replay_file()):sink(counting)
end)
shape_def("nexmark_sink", function(env)
  env:nexmark_bids{ count = N }:map(function(b) return b.price end):sink(counting)
end)
-- each sink kind
shape_def("generate_print", function(env)
  env:generate(function(i) return i end, { count = N }):print()
end)
shape_def("generate_write_text", function(env)
  env:generate(function(i) return i end, { count = N })
    :write_text(dir .. "/out.txt", { overwrite = true })
end)
shape_def("generate_collect", function(env)
  env:generate(function(i) return i end, { count = N }):collect()
end)
-- stateless chains
shape_def("map_filter_flat_map", function(env)
  env:generate(function(i) return i end, { count = N })
    :map(function(i) return i * 3 end)
    :filter(function(v) return v % 2 == 0 end)
    :flat_map(function(v, out)
      out(v)
      out(v + 1)
    end)
    :sink(counting)
end)
shape_def("file_map_filter", function(env)
  env:read_text_file(kv_file())
    :map(function(line) return tonumber(sub(line, 1, find(line, ",", 1, true) - 1)) end)
    :filter(function(k) return k % 2 == 0 end)
    :sink(counting)
end)
shape_def("process_side_output", function(env)
  local odd = weir.output_tag("odd")
  local s = env:generate(function(i) return i end, { count = N })
    :process(function(v, ctx, out)
      if v % 2 == 1 then
        ctx:output(odd, v)
      else
        out(v)
      end
    end)
  s:sink(counting)
  s:get_side_output(odd):sink(counting)
end)
shape_def("key_by_sink", function(env)
  env:generate(function(i) return i end, { count = N })
    :key_by(function(i) return i % KEYS end)
    :sink(counting)
end)
shape_def("key_by_string_p2", function(env)
  local names = {}
  for k = 0, KEYS - 1 do
    names[k] = "k" .. k
  end
  env:generate(function(i) return i end, { count = N })
    :key_by(function(i) return names[i % KEYS] end)
    :map(function(i) return i + 1 end)
    :sink(counting)
end, 2)
shape_def("key_by_p2", function(env)
  env:generate(function(i) return i end, { count = N })
    :map(function(i) return i % 1024 end)
    :key_by(function(k) return k end)
    :sink(counting)
end, 2)
shape_def("rebalance_p2", function(env)
  env:generate(function(i) return i end, { count = N }):set_parallelism(1)
    :rebalance()
    :map(function(i) return i + 1 end)
    :sink(counting)
end, 2)
shape_def("union", function(env)
  local a = env:generate(function(i) return i end, { count = N })
  local b = env:generate(function(i) return -i end, { count = N })
  a:union(b):map(function(v) return v * 2 end):sink(counting)
end)
shape_def("timestamps_sink", function(env)
  timed(env):sink(counting)
end)
shape_def("timestamps_key_by_process", function(env)
  timed(env):key_by(ev_key):process(function(e, ctx, out)
    out(ctx:timestamp() + ctx:current_key() + e[2])
  end):sink(counting)
end)
-- two inputs (weir.connect, weir.join, weir.interval)
shape_def("connect_co_map", function(env)
  local a = env:generate(function(i) return i end, { count = N })
  local b = env:generate(function(i) return -i end, { count = N })
  a:connect(b):co_map{ map1 = function(_, v) return v + 1 end,
                       map2 = function(_, v) return v - 1 end }:sink(counting)
end)
shape_def("connect_co_flat_map", function(env)
  local a = env:generate(function(i) return i end, { count = N })
  local b = env:generate(function(i) return -i end, { count = N })
  a:connect(b):co_flat_map{ flat_map1 = function(_, v, out) out(v) end,
                            flat_map2 = function(_, v, out) out(v) out(v) end }:sink(counting)
end)
shape_def("connect_co_process", function(env)
  timed(env):key_by(ev_key):connect(timed(env):key_by(ev_key)):co_process{
    open = function(self, rt) self.n = rt:value_state("n") end,
    process1 = function(self, e, ctx)
      self.n:update((self.n:value() or 0) + 1)
      ctx:timer_service():register_event_time_timer(e[2] + 10)
    end,
    process2 = function(self, e, _, out) out(e[2] + (self.n:value() or 0)) end,
    on_timer = function(_, t, _, out) out(t) end,
  }:sink(counting)
end)
shape_def("window_join", function(env)
  timed(env):join(timed(env)):where(ev_key):equal_to(ev_key):window(W.tumbling_event_time("20ms"))
    :apply(function(l, r) return l[2] + r[2] end):sink(counting)
end)
shape_def("window_co_group", function(env)
  timed(env):co_group(timed(env)):where(ev_key):equal_to(ev_key)
    :window(W.tumbling_event_time("1s"))
    :apply(function(key, ls, rs, out) out(key + #ls + #rs) end):sink(counting)
end)
shape_def("interval_join", function(env)
  timed(env):key_by(ev_key):interval_join(timed(env):key_by(ev_key)):between(-100, 100)
    :process(function(l, r, ctx, out) out(ctx:timestamp() + l[2] - r[2]) end):sink(counting)
end)
-- every window assigner with every window function
local ASSIGNERS = {
  { "tumbling", tumbling }, { "sliding", sliding }, { "session", session, { gaps = true } },
  { "dynamic_session", dyn_session, { gaps = true } },
  { "tumbling_pt", tumbling_pt, { input = replayed } },
  { "sliding_pt", sliding_pt, { input = replayed } },
  { "session_pt", session_pt, { input = replayed } },
}
for _, a in ipairs(ASSIGNERS) do
  for _, f in ipairs({ "reduce", "reduce_fn", "aggregate", "aggregate_fn", "process", "apply" }) do
    shape_def(a[1] .. "_" .. f, windowed(a[2], f, a[3]))
  end
end
shape_def("tumbling_late_lateness", windowed(tumbling, "aggregate_fn",
  { lateness = "10ms", late = true }))
-- the built-in aggregates (weir.aggregates) on every event-time assigner and a count window
for _, a in ipairs({ { "tumbling", tumbling }, { "sliding", sliding },
                     { "session", session, { gaps = true } } }) do
  for _, f in ipairs({ "builtin_count", "builtin_sum", "builtin_avg_fn" }) do
    shape_def(a[1] .. "_" .. f, windowed(a[2], f, a[3]))
  end
end
shape_def("tumbling_builtin_late_lateness", windowed(tumbling, "builtin_sum",
  { lateness = "10ms", late = true }))
shape_def("count_window_builtin", function(env)
  timed(env):key_by(ev_key):count_window(10):aggregate(weir.aggregates.max(2)):sink(counting)
end)
shape_def("window_all_tumbling", function(env)
  timed(env):window_all(tumbling()):aggregate(count_agg, count_fn):sink(counting)
end)
shape_def("count_window", function(env)
  timed(env):key_by(ev_key):count_window(10):reduce(sum_reduce):sink(counting)
end)
shape_def("count_window_sliding", function(env)
  timed(env):key_by(ev_key):count_window(10, 5):aggregate(count_agg):sink(counting)
end)
-- every built-in trigger (and a Lua one)
local TRIGGERS = {
  { "event_time", function() return T.event_time() end },
  { "processing_time", function() return T.processing_time() end, { input = replayed } },
  { "count", function() return T.count(7) end },
  { "purging_count", function() return T.purging(T.count(7)) end },
  { "continuous_event_time", function() return T.continuous_event_time("200ms") end },
  { "continuous_processing_time", function() return T.continuous_processing_time("200ms") end,
    { input = replayed } },
  { "processing_timeout", function() return T.processing_timeout(T.count(7), "50ms") end,
    { input = replayed } },
  { "delta", function() return T.delta(50, function(a, b) return b[2] - a[2] end) end },
  { "never", function() return T.never() end },
  { "lua", lua_event_time },
}
for _, t in ipairs(TRIGGERS) do
  local opts = t[3] or {}
  opts.trigger = t[2]
  shape_def("trigger_" .. t[1], windowed(opts.input and tumbling_pt or tumbling, "aggregate_fn",
    opts))
end
shape_def("trigger_lua_session", windowed(session, "aggregate_fn",
  { gaps = true, trigger = lua_event_time }))
shape_def("trigger_count_global", windowed(global, "reduce", { trigger = function()
  return T.purging(T.count(9))
end }))
-- evictors
local EVICTORS = {
  { "count", function() return E.count(3) end },
  { "count_after", function() return E.count(3, { after = true }) end },
  { "time", function() return E.time("100ms") end },
  { "delta", function() return E.delta(10, function(a, b) return b[2] - a[2] end) end },
  { "lua", function()
    return weir.evictor{ evict_before = function(_, elements, size)
      if size > 4 then
        elements:remove(1)
      end
    end }
  end },
}
for _, e in ipairs(EVICTORS) do
  shape_def("evictor_" .. e[1], windowed(tumbling, "process", { evictor = e[2] }))
end

if shape == "--list" then
  for _, name in ipairs(ORDER) do
    print(name)
  end
  return
end

local def = SHAPES[shape]
if not def or not dir then
  error(("jitshapes.lua: expected a shape (--list) and a directory, got %s %s"):format(
    tostring(shape), tostring(dir)))
end

local env = weir.env{ parallelism = def.parallelism, auto_watermark_interval = "1ms" }
def.build(env)
-- The garbage of the build (this file's input writing: closed file handles, whose __gc still
-- runs) is collected now: a finalizer that runs while LuaJIT records a trace aborts it
-- (lj_gc.c, gc_call_finalizer: lj_trace_abort; lj_trace.c reports it as "error thrown or hook
-- called during recording"), wherever the recorder happens to be.
collectgarbage()
collectgarbage()
jit.attach(watch, "trace")
env:execute("jit shape " .. shape)
jit.attach(watch)

local fh = assert(io.open(dir .. "/" .. shape .. ".trace", "wb"))
for _, e in ipairs(events) do
  fh:write(table.concat(e, "\t"), "\n")
end
fh:close()
