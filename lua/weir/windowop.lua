-- weir.windowop: Flink's WindowOperator and EvictingWindowOperator (SEMANTICS §5, §7, §8) for
-- one window node. State per subtask: the C store maps (key, window) to a slot and holds the
-- trigger's numeric state cells; C timers hold (time, key, window); Lua holds the contents of
-- each slot (the elements, or the reduce/aggregate accumulator) by slot id.
local ffi = require("ffi")
local C = require("weir.ffi")
local windows = require("weir.windows")
local triggers = require("weir.triggers")
local evictors = require("weir.evictors")

local M = {}

local INF = math.huge
local EVENT, PROCESSING = tonumber(C.WEIR_TIME_EVENT), tonumber(C.WEIR_TIME_PROCESSING)
local CELLS = 4
local timer_t = ffi.typeof("weir_timer_t")
local NAN = 0 / 0

local function cleanup_time(node, maxts)
  if not node.assigner.is_event_time then
    return maxts
  end
  local t = maxts + node.lateness
  if t >= 9.2e18 then
    return INF
  end
  return t
end

-- Contexts ---------------------------------------------------------------------------------

local State = {}
State.__index = State

local function cell_index(node, name)
  local idx = node.cell_of[name]
  if idx == nil then
    idx = node.cell_count < CELLS and node.cell_count or false
    node.cell_count = node.cell_count + 1
    node.cell_of[name] = idx
  end
  return idx
end

function State:get()
  local ctx = self.ctx
  local slot = ctx.slot
  if slot < 0 then
    return nil
  end
  local lua = ctx.inst.lua_state[slot]
  if lua and lua[self.name] ~= nil then
    return lua[self.name]
  end
  local idx = self.idx
  if idx then
    local v = C.weir_store_cells(ctx.inst.store, slot)[idx]
    if v == v then
      return v
    end
  end
  return nil
end

function State:set(v)
  if v == nil then
    return self:clear()
  end
  local ctx = self.ctx
  local slot = ctx:ensure_slot()
  local inst = ctx.inst
  local idx = self.idx
  if idx and type(v) == "number" and v == v then
    C.weir_store_cells(inst.store, slot)[idx] = v
    local lua = inst.lua_state[slot]
    if lua then
      lua[self.name] = nil
    end
  else
    local lua = inst.lua_state[slot] or {}
    inst.lua_state[slot] = lua
    lua[self.name] = v
    if idx then
      C.weir_store_cells(inst.store, slot)[idx] = NAN
    end
  end
end

function State:clear()
  local ctx = self.ctx
  local slot = ctx.slot
  if slot < 0 then
    return
  end
  local lua = ctx.inst.lua_state[slot]
  if lua then
    lua[self.name] = nil
  end
  if self.idx then
    C.weir_store_cells(ctx.inst.store, slot)[self.idx] = NAN
  end
end

-- The trigger context: one per subtask, pointed at the current (key, window) before each call.
local TriggerContext = {}
TriggerContext.__index = TriggerContext

function TriggerContext:current_watermark()
  return self.inst.watermark
end

function TriggerContext:current_processing_time()
  return self.job:now()
end

local function check_time(t, what)
  if type(t) ~= "number" or t ~= t then
    error(("%s: the time must be a number, got %s"):format(what, tostring(t)), 3)
  end
end

function TriggerContext:register_event_time_timer(t)
  check_time(t, "register_event_time_timer")
  local w = self.window
  C.weir_timers_register(self.inst.timers, EVENT, t, self.kid, w.start, w.stop)
end

function TriggerContext:delete_event_time_timer(t)
  check_time(t, "delete_event_time_timer")
  local w = self.window
  C.weir_timers_delete(self.inst.timers, EVENT, t, self.kid, w.start, w.stop)
end

function TriggerContext:register_processing_time_timer(t)
  check_time(t, "register_processing_time_timer")
  local w = self.window
  C.weir_timers_register(self.inst.timers, PROCESSING, t, self.kid, w.start, w.stop)
  self.job:processing_timers_changed()
end

function TriggerContext:delete_processing_time_timer(t)
  check_time(t, "delete_processing_time_timer")
  local w = self.window
  C.weir_timers_delete(self.inst.timers, PROCESSING, t, self.kid, w.start, w.stop)
  self.job:processing_timers_changed()
end

function TriggerContext:state(name)
  local s = self.states[name]
  if not s then
    s = setmetatable({ ctx = self, name = name, idx = cell_index(self.node, name) }, State)
    self.states[name] = s
  end
  return s
end

function TriggerContext:ensure_slot()
  if self.slot < 0 then
    local w = self.window
    self.slot = C.weir_store_slot(self.inst.store, self.kid, w.start, w.stop)
  end
  return self.slot
end

-- The window function's context (ProcessWindowFunction.Context).
local WindowContext = {}
WindowContext.__index = WindowContext

function WindowContext:window()
  return self.win
end

function WindowContext:current_watermark()
  return self.inst.watermark
end

function WindowContext:current_processing_time()
  return self.job:now()
end

function WindowContext:output(tag, v)
  if type(tag) ~= "table" or not tag.id then
    error("ctx:output: expected an output tag", 2)
  end
  if v == nil then
    error("ctx:output: cannot emit nil", 2)
  end
  local e = self.node.side[tag.id]
  if e then
    e(self.inst.index, v, self.win:max_timestamp())
  end
end

function WindowContext:window_state()
  local inst, w = self.inst, self.win
  local slot = C.weir_store_slot(inst.store, self.kid, w.start, w.stop)
  local s = inst.wstate[slot]
  if not s then
    s = {}
    inst.wstate[slot] = s
  end
  return s
end

function WindowContext:global_state()
  local g = self.inst.gstate[self.kid]
  if not g then
    g = {}
    self.inst.gstate[self.kid] = g
  end
  return g
end

-- The operator -------------------------------------------------------------------------------

local function canonical(key)
  local parts = {}
  for i = 1, #key do
    local f = key[i]
    parts[i] = type(f) == "table" and ("{" .. canonical(f) .. "}") or (type(f) .. ":" ..
      tostring(f))
  end
  return table.concat(parts, "\0")
end

local function check_result(node, r, what)
  if not triggers.valid_result[r] then
    error(("trigger %s: %s returned %s, not a trigger result (weir.CONTINUE, weir.FIRE, "
      .. "weir.PURGE or weir.FIRE_AND_PURGE)"):format(node.trigger.name, what, tostring(r)), 0)
  end
  return r
end

---Wires the window node: node.push(st, v, ts, key) and node.on_watermark(inst, w).
function M.instantiate(job, node)
  local assigner, trigger, evictor = node.assigner, node.trigger, node.evictor
  local is_event_time = assigner.is_event_time
  local lateness = node.lateness
  local keyed = node.keyed
  local fn_kind, fn, pfn = node.fn_kind, node.user_fn, node.process_fn
  local rich = node.rich
  local objs = node.objs
  local emit = node.emit
  local late_emit = node.late_tag and node.side[node.late_tag.id]
  node.cell_of, node.cell_count, node.late_dropped = {}, 0, 0
  local starts = {}

  for _, inst in ipairs(node.instances) do
    inst.store = ffi.gc(C.weir_store_new(CELLS), C.weir_store_free)
    inst.timers = ffi.gc(C.weir_timers_new(), C.weir_timers_free)
    inst.key_ids, inst.keys = {}, {}
    inst.contents, inst.stamps, inst.wins = {}, {}, {}
    inst.lua_state, inst.wstate, inst.gstate = {}, {}, {}
    inst.tctx = setmetatable({ inst = inst, node = node, job = job, states = {}, slot = -1 },
      TriggerContext)
    inst.wctx = setmetatable({ inst = inst, node = node, job = job }, WindowContext)
    inst.timer = timer_t()
  end
  job.timer_nodes[#job.timer_nodes + 1] = node

  local function intern(inst, key)
    if not keyed then
      return 1
    end
    local k = type(key) == "table" and canonical(key) or key
    local id = inst.key_ids[k]
    if not id then
      id = #inst.keys + 1
      inst.keys[id] = key
      inst.key_ids[k] = id
    end
    return id
  end

  local function window_of(inst, slot, start, stop)
    local w = inst.wins[slot]
    if not w then
      w = windows.window(start, stop)
      inst.wins[slot] = w
    end
    return w
  end

  -- Emitting a fire: outputs carry the window's max timestamp.
  local cur_st, cur_ts = 0, nil
  local function out(x)
    if x == nil then
      error("out(nil): records cannot be nil", 2)
    end
    return emit(cur_st, x, cur_ts)
  end

  local function result_of(values)
    -- reduce/aggregate over a list (evicting operator), as Flink computes them at fire time
    if fn_kind == "reduce" then
      local acc = values[1]
      for i = 2, #values do
        acc = fn(acc, values[i])
      end
      return acc
    elseif fn_kind == "aggregate" then
      local acc = fn.create()
      for i = 1, #values do
        acc = fn.add(values[i], acc)
      end
      return fn.result(acc)
    end
  end

  local function call_window_fn(inst, key, w, elements, kid)
    local st = inst.index
    cur_st, cur_ts = st, w:max_timestamp()
    local target, method = pfn, node.method
    if fn_kind == "process" or fn_kind == "apply" then
      target = fn
    end
    if target == nil then
      -- plain reduce/aggregate: the value itself
      local v = elements[1]
      if v ~= nil then
        out(v)
      end
      return
    end
    local f, obj = target, nil
    if rich then
      obj = objs[st]
      f = obj[method]
    end
    if method == "apply" then
      if obj then
        f(obj, key, w, elements, out)
      else
        f(key, w, elements, out)
      end
    else
      local ctx = inst.wctx
      ctx.win, ctx.kid, ctx.key = w, kid, key
      if obj then
        f(obj, key, ctx, elements, out)
      else
        f(key, ctx, elements, out)
      end
    end
  end

  local function fire(inst, slot, key, kid, w)
    local c = inst.contents[slot]
    if c == nil then
      return
    end
    if evictor then
      local values, stamps = c, inst.stamps[slot]
      local elements = evictors.elements(values, stamps)
      local ctx = inst.tctx
      if evictor.evict_before then
        evictor:evict_before(elements, #values, w, ctx)
      end
      local input = values
      if fn_kind == "reduce" or fn_kind == "aggregate" then
        input = { result_of(values) }
      end
      call_window_fn(inst, key, w, input, kid)
      if evictor.evict_after then
        evictor:evict_after(elements, #values, w, ctx)
      end
      C.weir_store_count_add(inst.store, slot, #values - C.weir_store_count(inst.store, slot))
      return
    end
    if fn_kind == "reduce" then
      call_window_fn(inst, key, w, { c }, kid)
    elseif fn_kind == "aggregate" then
      call_window_fn(inst, key, w, { fn.result(c) }, kid)
    else
      call_window_fn(inst, key, w, c, kid)
    end
  end

  local function purge(inst, slot)
    inst.contents[slot] = nil
    inst.stamps[slot] = nil
    C.weir_store_count_add(inst.store, slot, -C.weir_store_count(inst.store, slot))
  end

  local function add(inst, slot, v, ts)
    local c = inst.contents[slot]
    if evictor or fn_kind == "process" or fn_kind == "apply" then
      if c == nil then
        c = {}
        inst.contents[slot] = c
        if evictor then
          inst.stamps[slot] = {}
        end
      end
      c[#c + 1] = v
      if evictor then
        local s = inst.stamps[slot]
        s[#s + 1] = ts
      end
    elseif fn_kind == "reduce" then
      if c == nil then
        inst.contents[slot] = v
      else
        local r = fn(c, v)
        if r == nil then
          error("reduce function returned nil", 0)
        end
        inst.contents[slot] = r
      end
    else -- aggregate
      if c == nil then
        c = fn.create()
        if c == nil then
          error("aggregate: create() returned nil", 0)
        end
      end
      local r = fn.add(v, c)
      if r == nil then
        error("aggregate: add() returned nil", 0)
      end
      inst.contents[slot] = r
    end
    C.weir_store_count_add(inst.store, slot, 1)
  end

  local function register_cleanup(inst, kid, w)
    local t = cleanup_time(node, w:max_timestamp())
    if t ~= INF then
      C.weir_timers_register(inst.timers, is_event_time and EVENT or PROCESSING, t, kid,
        w.start, w.stop)
      if not is_event_time then
        job:processing_timers_changed()
      end
    end
  end

  local function clear_all(inst, key, kid, w)
    local ctx = inst.tctx
    local slot = C.weir_store_find(inst.store, kid, w.start, w.stop)
    ctx.key, ctx.kid, ctx.window, ctx.slot = key, kid, w, slot
    if slot >= 0 then
      purge(inst, slot)
    end
    trigger:clear(w, ctx)
    if rich and objs[inst.index].clear then
      local wctx = inst.wctx
      wctx.win, wctx.kid, wctx.key = w, kid, key
      objs[inst.index]:clear(wctx)
    end
    slot = C.weir_store_find(inst.store, kid, w.start, w.stop)
    if slot >= 0 then
      inst.wins[slot], inst.lua_state[slot], inst.wstate[slot] = nil, nil, nil
      C.weir_store_drop(inst.store, slot)
    end
  end

  node.push = function(st, v, ts, key)
    local inst = node.instances[st + 1]
    if is_event_time and (ts == nil or ts == -INF) then
      error("the record has no timestamp: an event-time window needs "
        .. "assign_timestamps_and_watermarks before it", 0)
    end
    local kid = intern(inst, key)
    local n = assigner:assign(ts, job:now(), starts)
    local W = inst.watermark
    local skipped = true
    local ctx = inst.tctx
    for i = 1, n do
      local start = starts[i]
      local stop = assigner:stop(start)
      local maxts = stop == INF and INF or stop - 1
      if not (is_event_time and cleanup_time(node, maxts) <= W) then
        skipped = false
        local slot = C.weir_store_slot(inst.store, kid, start, stop)
        add(inst, slot, v, ts)
        local w = window_of(inst, slot, start, stop)
        ctx.key, ctx.kid, ctx.window, ctx.slot = key, kid, w, slot
        local r = check_result(node, trigger:on_element(v, ts, w, ctx), "on_element")
        if r % 2 == 1 then
          fire(inst, slot, key, kid, w)
        end
        if r >= 2 then
          purge(inst, slot)
        end
        register_cleanup(inst, kid, w)
      end
    end
    if skipped and is_event_time and ts + lateness <= W then
      if late_emit then
        late_emit(st, v, ts)
      else
        node.late_dropped = node.late_dropped + 1
      end
    end
  end

  local function on_timer(inst, domain, t, kid, start, stop)
    local key = inst.keys[kid]
    local slot = C.weir_store_find(inst.store, kid, start, stop)
    local w = slot >= 0 and window_of(inst, slot, start, stop) or windows.window(start, stop)
    local ctx = inst.tctx
    ctx.key, ctx.kid, ctx.window, ctx.slot = key, kid, w, slot
    local r
    if domain == EVENT then
      r = check_result(node, trigger:on_event_time(t, w, ctx), "on_event_time")
    else
      r = check_result(node, trigger:on_processing_time(t, w, ctx), "on_processing_time")
    end
    slot = ctx.slot
    if slot >= 0 then
      if r % 2 == 1 then
        fire(inst, slot, key, kid, w)
      end
      if r >= 2 then
        purge(inst, slot)
      end
    end
    if (domain == EVENT) == is_event_time and t == cleanup_time(node, w:max_timestamp()) then
      clear_all(inst, key, kid, w)
    end
  end

  ---Fires every event-time timer at or before the new watermark w (inst.watermark is w).
  node.on_watermark = function(inst, w)
    local tm = inst.timer
    while C.weir_timers_pop(inst.timers, EVENT, w, tm) == 1 do
      on_timer(inst, EVENT, tm.time_ms, tm.key, tm.start, tm.stop)
    end
  end

  ---Fires every processing-time timer at or before time t. With as_if_due (weir's end of
  ---input), the clock reads each timer's time + 1 while it fires, as if its time had come.
  node.on_processing_time = function(inst, t, as_if_due)
    local tm = inst.timer
    while C.weir_timers_pop(inst.timers, PROCESSING, t, tm) == 1 do
      if as_if_due then
        job.now_override = tm.time_ms + 1
      end
      on_timer(inst, PROCESSING, tm.time_ms, tm.key, tm.start, tm.stop)
    end
    job.now_override = nil
  end
end

return M
