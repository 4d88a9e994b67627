-- weir.windowing: the one face of the window layer. It chooses the operator that runs a window
-- node (weir.aggwindow for the common shape, weir.sessionop for event-time sessions,
-- weir.windowop for every other) and is the only module that requires them; the job (weir.run)
-- and the tools (weir.status, weir.explain, weir.repl) read windows only through the functions
-- below, never through an instance's fields.
--
-- The operator interface. An operator module implements:
--   instantiate(job, node)      wires node.push(st, v, ts, key), node.on_watermark(inst, w) and
--                               node.on_processing_time(inst, t, as_if_due) for every subtask
--                               in node.instances, and appends node to job.timer_nodes; with
--                               job.trace (the REPL) it records late records, elements and fires
--                               there (trace below); it may set
--                               node.watermark_lowered(inst), called when inst.watermark went
--                               down (weir.scaleout)
--   stats(node, inst)           { open_windows, elements, store_bytes, event_timers,
--                               next_event_timer, processing_timers, next_processing_timer }
--   list(node, inst, keep, with_contents)  the subtask's state by key id, for M.state:
--                               { windows = {{ kid, start, stop, [sstart, sstop], contents,
--                               [timestamps], count, [trigger_state], window_state, fired,
--                               [retired] }}, timers = {{ domain, time, kid, start, stop }} in
--                               pop order, gstate = { kid -> global_state }, [slices] };
--                               keep(kid) says which keys; it changes no state
--   next_processing_time(node, inst)  the earliest processing-time timer, or +inf
--   last_processing_time(node, inst)  the latest processing-time timer, or -inf (end of input)
--   key_of(node, inst, kid)     the key of a key id (the error handler's frames carry ids)
-- and keeps inst.watermark (set by the job) and inst.firing (true while a watermark's timers
-- fire, for the error report). The trace (job.trace) is { late = {...}, elements = {key ->
-- timestamps}, keys = {...}, fired = {{key, start, stop, what, node}} }: the same for both
-- operators.
--
-- The enumeration, M.state(node, inst, filter): everything a subtask's windows hold, as plain
-- values (keys, times, tables; no slot ids, no addresses), for checkpoints and the inspectors,
-- read from the one home of each operator's state (weir.winstate, weir.aggstate). filter:
-- nil (all), { key = k } or { key_group = g } (Flink's key group of the key, as the hash
-- exchange computes it, with the node's max parallelism). It returns
--   windows      per window: key, key_group, window, state_window (merging windows: where
--                the contents live, else nil), contents (the elements, or the accumulator),
--                timestamps (with an evictor), count, trigger_state (name -> value), window_state,
--                fired (it has fired at least once), status ("open": not past its end; "kept":
--                past its end and kept for late records until cleanup; "retired": a merging
--                window dropped as late whose state Flink also keeps), cleanup (the time it is
--                cleaned up), waits (what it waits for: { what = "watermark" | "processing
--                time" | "cleanup" | "count" | "nothing", time, count, have })
--   global_state per key: key, key_group, state
--   timers       key, key_group, domain ("event"/"processing"), time, window; in pop order
--                ((time, registration) per domain)
--   slices       sliced sliding windows: key, key_group, start, stop, acc, count per slice
-- listed by key (as format.value prints them), then window start, then end.
-- the operators and their state load with a job's first window (weir.lazy)
local lazy = require("weir.lazy")
local aggwindow = lazy.require("weir.aggwindow")
local sessionop = lazy.require("weir.sessionop")
local windows = require("weir.windows")
local keys = require("weir.keys")
local format = require("weir.format")
local wc = lazy.require("weir.wincontext")
local C = require("weir.ffi")

local M = {}

---Which operator runs window node n of plan env: "tumbling" or "sliced" (weir.aggwindow),
---"triggered" (weir.aggwindow: a Lua trigger on tumbling windows, which moves the node to the
---general operator when it asks for more than its window's timer), "session" (weir.sessionop:
---event-time sessions) or "general" (weir.windowop). From the
---node's shape alone: no user code runs. A "sliced" node whose aggregate's create() returns no
---number, and a "session" node of a job with on_error or the REPL's trace, run on the general
---operator (M.instantiate). The tests' aggwindow.disabled (the general operator for every
---shape) holds for sessions too.
function M.choose(env, n)
  local a = n.assigner
  if n.fn_kind ~= "reduce" and n.fn_kind ~= "aggregate" then
    return "general"
  end
  if a.merging and a.is_event_time and not n.evictor and n.trigger.builtin == "event_time"
      and not n.rich and not sessionop.disabled and not aggwindow.disabled then
    return "session"
  end
  if not aggwindow.disabled and aggwindow.triggered_shape(n) then
    return "triggered" -- a Lua trigger on tumbling windows (weir.aggwindow)
  end
  if aggwindow.disabled or a.merging or a.global or not a.is_event_time or n.evictor
      or n.trigger.builtin ~= "event_time" then
    return "general"
  end
  if a.size == a.slide then
    return "tumbling"
  end
  if (n.fn_kind == "aggregate" and not n.user_fn.merge) or env.slicing == false
      or a.size % a.slide ~= 0 then
    return "general" -- reduce is its own merge
  end
  return "sliced"
end

-- (by name: a node's window_op is the module itself, which callers compare)
local OPS = { tumbling = "weir.aggwindow", sliced = "weir.aggwindow", general = "weir.windowop",
              session = "weir.sessionop", triggered = "weir.aggwindow" }

-- Session windows run on weir.sessionop only where it has every piece the job uses: the
-- REPL's trace and on_error's guarded fires are the general operator's, so those jobs run
-- there.
local function session_ok(job)
  return not (job.trace or job:fire_guard())
end

---Runs window node on the operator M.choose names; sliced only when create() gives a number
---(slices.c keeps number accumulators), which is known only by calling it, at the start.
function M.instantiate(job, node)
  local how = M.choose(job.plan.env, node)
  if how == "session" and not session_ok(job) then
    how = "general"
  end
  if how == "triggered" and not (session_ok(job) and not job.check_triggers) then
    how = "general" -- the trace, on_error's guards and --check-triggers are the general's
  end
  node.lua_trigger = how == "triggered"
  if how == "sliced" and node.fn_kind == "aggregate" then
    local ok, acc = pcall(node.user_fn.create)
    if not ok or type(acc) ~= "number" then
      how = "general"
    end
  end
  node.window_op = require(OPS[how])
  node.to_general, node.general_push = false, false
  if how == "sliced" and node.fn_kind == "reduce" then
    -- reduce keeps its values, sliced only while they are numbers: the operator calls this
    -- when the node's first element is none (and nothing is stored), or a restore when the
    -- state it restores ran on the general operator; it returns the general operator's push
    node.to_general = function()
      for i, n in ipairs(job.timer_nodes) do
        if n == node then
          table.remove(job.timer_nodes, i)
          break
        end
      end
      local windowop = require("weir.windowop")
      node.window_op, node.to_general = windowop, false
      local push = node.push
      windowop.instantiate(job, node)
      local general = node.push
      node.push = push -- the job's entry to the node stays; the sliced push forwards
      node.general_push = general
      return general
    end
  end
  -- Every field a subtask's table gets while records flow exists before they do: a field
  -- added later can grow the table's hash part, and a grown table fails the slot guards of
  -- every trace recorded on it (nexmark q5 ran 1.5x slower when the sliced window's subtask
  -- went from 31 to 32+ fields mid-run). The operator makes its own at instantiate; these are
  -- the job's: firing (set by the operators, read by the error handler) and the stall check's
  -- (weir.status.check_stalls; false compares unequal to any watermark, as nil did).
  for _, inst in ipairs(node.instances) do
    inst.firing = false
    inst.stall_wm, inst.stall_since, inst.stall_records, inst.stall_warned = false, 0, 0, false
  end
  node.window_op.instantiate(job, node)
end

---Whether node runs on a window operator (what status and the REPL list as windows; a keyed
---process function plugs into the same interface for its timers but has no windows).
function M.runs(node)
  return node.window_op ~= nil and not node.window_op.no_windows
end

---The state and timers of one subtask (the interface's stats).
function M.stats(node, inst)
  return node.window_op.stats(node, inst)
end

-- The enumeration ---------------------------------------------------------------------------

local INF = math.huge

---Flink's key group of key in node (nil for a stream that is not keyed).
local function key_group(node, key)
  if not node.keyed then
    return nil
  end
  local h = keys.java_hash(key)
  return h and C.weir_keygroup_of(h, node.max_parallelism) or nil
end
M.key_group = key_group

local function same_key(a, b)
  return a == b or (a ~= a and b ~= b) or format.value(a) == format.value(b)
end

-- The trigger's count when it is a count trigger (triggers.count, or purging of one).
local function count_of(trigger)
  return trigger.count or (trigger.inner and trigger.inner.count)
end

-- What window e waits for, from its timers (in pop order) and the trigger.
local function waits_of(node, inst, e, timers)
  local ev, pt
  for _, t in ipairs(timers) do
    if t.domain == "event" then
      ev = ev or t.time
    else
      pt = pt or t.time
    end
  end
  local n = count_of(node.trigger)
  if n then
    local have = e.trigger_state and e.trigger_state.count or 0
    return { what = "count", count = n, have = have, time = ev or pt }
  end
  local maxts = e.window:max_timestamp()
  if node.assigner.is_event_time and ev then
    if ev == e.cleanup and ev ~= maxts and maxts <= inst.watermark then
      return { what = "cleanup", time = ev }
    end
    return { what = "watermark", time = ev }
  end
  if pt then
    return { what = "processing time", time = pt }
  end
  if ev then
    return { what = "watermark", time = ev }
  end
  return { what = "nothing" }
end

---Everything the windows of one subtask hold, as plain values (the header says what); filter
---nil, { key = k } or { key_group = g }; opts.contents = false leaves contents out and
---opts.groups = false key groups (cheaper).
function M.state(node, inst, filter, opts)
  local op = node.window_op
  local key_of = function(kid) return op.key_of(node, inst, kid) end
  local groups = {}
  local function group_of(kid)
    local g = groups[kid]
    if g == nil then
      g = key_group(node, key_of(kid)) or false
      groups[kid] = g
    end
    return g or nil
  end
  local keep = function() return true end
  if filter and filter.key ~= nil then
    keep = function(kid) return same_key(key_of(kid), filter.key) end
  elseif filter and filter.key_group ~= nil then
    keep = function(kid) return group_of(kid) == filter.key_group end
  end
  if opts and opts.groups == false then
    group_of = function() return nil end
  end
  local raw = op.list(node, inst, keep, not (opts and opts.contents == false))
  local out = { windows = {}, global_state = {}, timers = {} }
  -- a window's timers by key id, start and stop (numbers: a string of a time can round)
  local per_window = {}
  local function timers_of(kid, start, stop, add)
    local k = per_window[kid]
    if not k then
      k = {}
      per_window[kid] = k
    end
    local a = k[start]
    if not a then
      a = {}
      k[start] = a
    end
    local list = a[stop]
    if not list then
      list = {}
      a[stop] = list
    end
    if add then
      list[#list + 1] = add
    end
    return list
  end
  for _, t in ipairs(raw.timers) do
    if keep(t.kid) then
      local x = { key = key_of(t.kid), key_group = group_of(t.kid), domain = t.domain,
                  time = t.time, window = windows.window(t.start, t.stop) }
      out.timers[#out.timers + 1] = x
      timers_of(t.kid, t.start, t.stop, x)
    end
  end
  local W = inst.watermark
  local texts, key_texts = {}, {}
  local function key_text(kid)
    local t = key_texts[kid]
    if not t then
      t = format.value(key_of(kid))
      key_texts[kid] = t
    end
    return t
  end
  local job = inst.tctx.job
  local now = job.rt ~= nil and job:now() or job.now_override or -INF -- an ended job: as left
  for _, r in ipairs(raw.windows) do
    local w = windows.window(r.start, r.stop)
    local maxts = w:max_timestamp()
    local e = {
      key = key_of(r.kid), key_group = group_of(r.kid), window = w,
      state_window = r.sstart and (r.sstart ~= r.start or r.sstop ~= r.stop)
        and windows.window(r.sstart, r.sstop) or nil,
      contents = r.contents, timestamps = r.timestamps, count = r.count,
      trigger_state = r.trigger_state, window_state = r.window_state, fired = r.fired,
      cleanup = wc.cleanup_time(node, maxts),
    }
    local past = maxts <= (node.assigner.is_event_time and W or now)
    e.status = r.retired and "retired" or (past and "kept" or "open")
    e.waits = waits_of(node, inst, e, timers_of(r.kid, r.start, r.stop))
    out.windows[#out.windows + 1] = e
    texts[e] = key_text(r.kid)
  end
  table.sort(out.windows, function(a, b)
    local ka, kb = texts[a], texts[b]
    if ka ~= kb then
      return ka < kb
    end
    local wa, wb = a.window, b.window
    if wa.start ~= wb.start then
      return wa.start < wb.start
    end
    return wa.stop < wb.stop
  end)
  for kid, g in pairs(raw.gstate) do
    if keep(kid) then
      out.global_state[#out.global_state + 1] = { key = key_of(kid), key_group = group_of(kid),
                                                  state = g }
    end
  end
  table.sort(out.global_state, function(a, b)
    return format.value(a.key) < format.value(b.key)
  end)
  if raw.slices then
    out.slices = {}
    for _, sl in ipairs(raw.slices) do
      out.slices[#out.slices + 1] = { key = key_of(sl.kid), key_group = group_of(sl.kid),
                                      start = sl.start, stop = sl.stop, acc = sl.acc,
                                      count = sl.count }
    end
    table.sort(out.slices, function(a, b)
      local ka, kb = format.value(a.key), format.value(b.key)
      if ka ~= kb then
        return ka < kb
      end
      return a.start < b.start
    end)
  end
  return out
end

---The open windows of one subtask (status, :windows, :why), by end, then key: { window, key,
---elements, waits_for (the time of what it waits for, or +inf), waits, status, cleanup,
---fired } (merging: the in-flight windows, with their state window's elements).
function M.windows(node, inst)
  local list = {}
  for _, e in ipairs(M.state(node, inst, nil, { contents = false, groups = false }).windows) do
    if e.status ~= "retired" then
      list[#list + 1] = { window = e.window, key = e.key, elements = e.count,
                          waits_for = e.waits.time or INF, waits = e.waits, status = e.status,
                          cleanup = e.cleanup, fired = e.fired }
    end
  end
  table.sort(list, function(a, b)
    if a.window.stop ~= b.window.stop then
      return a.window.stop < b.window.stop
    end
    return tostring(a.key) < tostring(b.key)
  end)
  return list
end

---The earliest processing-time timer of one subtask, or +inf.
---The latest processing-time timer of one subtask, or -inf.
function M.last_processing_time(node, inst)
  return node.window_op.last_processing_time(node, inst)
end

function M.next_processing_time(node, inst)
  return node.window_op.next_processing_time(node, inst)
end

-- Checkpoints ------------------------------------------------------------------------------

---Which operator state a window node has: "general", "tumbling" or "sliced" (nil for a node
---that runs on no window operator).
local function repr_of(node)
  local op = node.window_op
  if op == nil then
    return nil
  elseif op == package.loaded["weir.windowop"] then
    return "general"
  elseif op == package.loaded["weir.aggwindow"] then
    if node.lua_trigger then
      return "general" -- written as the general operator's (weir.aggwindow.snapshot)
    end
    return node.assigner.size == node.assigner.slide and "tumbling" or "sliced"
  elseif op == package.loaded["weir.sessionop"] then
    return "general" -- written as the general operator's (weir.sessionop.snapshot)
  end
  return nil
end
M.repr_of = repr_of

---The checkpoint parts of window node (weir.checkpoint's registry, by weir.checkpoint_parts):
---{ state = part }, a part whose snapshot is a section per key group (weir.winckpt writes
---them) and whose restore routes each key group to the subtask that owns it now; reset()
---throws the subtasks' window state away (the round-trip mode, weir.roundtrip).
function M.checkpoint_parts(job, node)
  if not repr_of(node) then
    return {}
  end
  local winckpt = require("weir.winckpt")
  local keyed = node.keyed and true or false
  local part
  part = {
    what = node.label .. " (its windows)",
    keyed = keyed,
    raw = true, -- winckpt checks the user values it writes (weir.ckvalue.keep)
    snapshot = function()
      local groups = (node.window_op == package.loaded["weir.sessionop"] or node.lua_trigger)
        and node.window_op.snapshot(node, part.name)
        or winckpt.snapshot(node, repr_of(node), part.name) -- a sliced reduce may move
      return keyed and groups or groups[-1]
    end,
    restore = function(v)
      local groups = keyed and v or { [-1] = v }
      if node.to_general then -- a sliced reduce whose state ran on the general operator
        for _, sec in pairs(groups) do
          if type(sec) == "table" and sec.repr == "general" then
            node.to_general() -- the sliced push forwards there
            break
          end
        end
      end
      if node.window_op == package.loaded["weir.sessionop"] or node.lua_trigger then
        return node.window_op.restore(job, node, groups)
      end
      winckpt.restore(job, node, repr_of(node), groups)
    end,
    reset = function()
      if node.window_op == package.loaded["weir.sessionop"] then
        return node.window_op.reset(node)
      elseif node.lua_trigger then
        return node.window_op.reset(job, node)
      end
      winckpt.reset(node, repr_of(node))
    end,
  }
  return { state = part }
end

---The key of key id kid in one subtask.
function M.key_of(node, inst, kid)
  return node.window_op.key_of(node, inst, kid)
end

-- set-up code, never traced (weir.codegen, "Set-up code"): a trace that a shared hot counter
-- starts here would end at the jit.off calls below them (Job:fire_guard)
jit.off(M.choose)
jit.off(session_ok)
jit.off(M.instantiate)
jit.off(M.checkpoint_parts)

return M
