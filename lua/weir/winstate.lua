-- weir.winstate: the one home of the general window operator's (weir.windowop) state, per
-- subtask. It defines every piece a window has, is the only code that creates and drops a
-- window (so no piece outlives its window), and lists them as plain values (M.list), for the
-- window layer's face (weir.windowing.state) and so for checkpoints and the inspectors.
--
-- The pieces stay fields of the subtask table (one hash load for the JIT's traces); this
-- module makes them all in M.init and no other module adds one:
--   inst.store      C store: (key id, window) -> slot; per slot the element count and
--                   wc.CELLS numeric trigger-state cells (NaN = unset)
--   inst.wins[slot], inst.wkid[slot]   the window object and key id of every open slot
--   inst.contents[slot]   the elements (a list) or the reduce/aggregate accumulator
--   inst.stamps[slot]     with an evictor, the elements' timestamps
--   inst.lua_state[slot]  trigger state that is not a number, or has no cell: name -> value
--   inst.wstate[slot]     window_state()
--   inst.fires[slot]      true once the window (its contents' slot) fired
--   inst.gstate[kid]      global_state() of a key
--   inst.msets            merging windows: the in-flight windows and their state windows
--   inst.timers           C timers (time, key id, window start, stop) per time domain
--   inst.keys, inst.key_ids   key interning (wc.interner): id -> key, key -> id
--   inst.klast[kid]  the key's last opened slot: a cache of the store's lookup (M.open)
--   inst.tke[slot], inst.tkp[slot]   the event-time and processing-time timer the trigger
--                   registered last for the slot's window, inst.tkc[slot] its cleanup time:
--                   timers known to be in inst.timers, so that registering one again (Flink's
--                   timer service is a set: a no-op) is a table check, not a C call. Only a
--                   cache: a time is set after its registration and goes when its timer is
--                   popped or deleted, or the slot dropped; an empty cache is always right
-- A slot exists from the first piece a window gets (an element, trigger state, window_state)
-- to M.drop; merging windows keep their contents in the slot of their state window.
local ffi = require("ffi")
local C = require("weir.ffi")
-- resolved now: the first lookup of a C function inside a trace aborts it ("symbol not in
-- cache"); these run per element and per fire
local _, _, _, _, _, _ = C.weir_store_cells, C.weir_store_count, C.weir_store_count_add,
  C.weir_store_drop, C.weir_store_find, C.weir_store_slot
local windows = require("weir.windows")
local mergeset = require("weir.mergeset")
local wc = require("weir.wincontext")
local util = require("weir.util")

local M = {}

local INF = math.huge
local EVENT, PROCESSING = tonumber(C.WEIR_TIME_EVENT), tonumber(C.WEIR_TIME_PROCESSING)
local timer_t = ffi.typeof("weir_timer_t")
local NAN = 0 / 0

---Makes every piece of a subtask's window state (and nothing else may add one).
function M.init(inst)
  inst.store = ffi.gc(C.weir_store_new(wc.CELLS), C.weir_store_free)
  inst.wstore = inst.store -- window_state() lives in the window's own slot
  inst.timers = ffi.gc(C.weir_timers_new(), C.weir_timers_free)
  inst.timer = timer_t() -- the pop buffer
  inst.key_ids, inst.keys = {}, {}
  inst.contents, inst.stamps, inst.wins, inst.wkid = {}, {}, {}, {}
  inst.lua_state, inst.wstate, inst.gstate, inst.fires = {}, {}, {}, {}
  inst.msets = mergeset.new()
  inst.tke, inst.tkp, inst.tkc = {}, {}, {}
  inst.klast = {} -- per key id, its last opened slot (M.open)
end

---The slot of window [start, stop) of key id kid, created (with its window object) when new.
---The key's last opened slot (inst.klast[kid]) answers without the store's hash probe while
---it is still that window's: a key's elements mostly come to the window of the one before.
local function open(inst, kid, start, stop)
  local wins = inst.wins
  local last = inst.klast[kid]
  if last then
    local w = wins[last]
    if w and w.start == start and w.stop == stop and inst.wkid[last] == kid then
      return last
    end
  end
  local slot = C.weir_store_slot(inst.store, kid, start, stop)
  if not wins[slot] then
    wins[slot], inst.wkid[slot] = windows.window(start, stop), kid
  end
  inst.klast[kid] = slot
  return slot
end
M.open = open

---The slot of window [start, stop) of key id kid, or -1.
function M.find(inst, kid, start, stop)
  local slot = C.weir_store_find(inst.store, kid, start, stop)
  return slot -- not a tail call: see weir.codegen, "Tail calls"
end

---Empties a window's contents (a purge): the elements, their timestamps, the count.
function M.purge(inst, slot)
  inst.contents[slot] = nil
  inst.stamps[slot] = nil
  C.weir_store_count_add(inst.store, slot, -C.weir_store_count(inst.store, slot))
end

---Drops the window in (open) slot with every piece it has.
local function drop_at(inst, slot)
  inst.contents[slot], inst.stamps[slot] = nil, nil
  inst.wins[slot], inst.wkid[slot] = nil, nil
  inst.lua_state[slot], inst.wstate[slot], inst.fires[slot] = nil, nil, nil
  inst.tke[slot], inst.tkp[slot], inst.tkc[slot] = nil, nil, nil
  C.weir_store_drop(inst.store, slot)
end
M.drop_at = drop_at

---Drops window [start, stop) of key id kid with every piece it has.
function M.drop(inst, kid, start, stop)
  local slot = C.weir_store_find(inst.store, kid, start, stop)
  if slot >= 0 then
    drop_at(inst, slot)
  end
end

---Timer (domain, t) of the window in slot (>= 0) left inst.timers (popped or deleted): the
---known-timer cache forgets it. cdomain is the domain of the window's cleanup timer.
function M.timer_gone(inst, slot, domain, t, cdomain)
  if domain == EVENT then
    if inst.tke[slot] == t then
      inst.tke[slot] = nil
    end
  elseif inst.tkp[slot] == t then
    inst.tkp[slot] = nil
  end
  if domain == cdomain and inst.tkc[slot] == t then
    inst.tkc[slot] = nil
  end
end

---A fire of the contents in slot.
function M.fired(inst, slot)
  inst.fires[slot] = true
end

---The open windows of a merging subtask: its in-flight windows.
function M.open_windows(inst)
  local n = 0
  for _, list in pairs(inst.msets) do
    n = n + #list
  end
  return n
end

-- Trigger state: a number in the state's cell when it has one (idx), anything else in Lua.

function M.state_get(inst, slot, name, idx)
  local lua = inst.lua_state[slot]
  if lua and lua[name] ~= nil then
    return lua[name]
  end
  if idx then
    local v = C.weir_store_cells(inst.store, slot)[idx]
    if v == v then
      return v
    end
  end
  return nil
end

function M.state_set(inst, slot, name, idx, v)
  if idx and type(v) == "number" and v == v then
    C.weir_store_cells(inst.store, slot)[idx] = v
    local lua = inst.lua_state[slot]
    if lua then
      lua[name] = nil
    end
  else
    local lua = inst.lua_state[slot] or {}
    inst.lua_state[slot] = lua
    lua[name] = v
    if idx then
      C.weir_store_cells(inst.store, slot)[idx] = NAN
    end
  end
end

function M.state_clear(inst, slot, name, idx)
  local lua = inst.lua_state[slot]
  if lua then
    lua[name] = nil
  end
  if idx then
    C.weir_store_cells(inst.store, slot)[idx] = NAN
  end
end

---The trigger state of a slot by name (node.cell_of names the cells), or nil when none.
local function trigger_state(node, inst, slot)
  local out
  for name, idx in pairs(node.cell_of) do
    local v = M.state_get(inst, slot, name, idx)
    if v ~= nil then
      out = out or {}
      out[name] = v
    end
  end
  local lua = inst.lua_state[slot]
  for name, v in pairs(lua or {}) do
    out = out or {}
    out[name] = v
  end
  return out
end
M.trigger_state = trigger_state

---window_state() of window [start, stop) of key id kid.
function M.window_state(inst, kid, start, stop)
  local slot = open(inst, kid, start, stop)
  local s = inst.wstate[slot]
  if not s then
    s = {}
    inst.wstate[slot] = s
  end
  return s
end

---global_state() of key id kid.
function M.global_state(inst, kid)
  local g = inst.gstate[kid]
  if not g then
    g = {}
    inst.gstate[kid] = g
  end
  return g
end

-- The enumeration (weir.windowing.state) ------------------------------------------------------

---A copy of a window's contents: a list is copied, an accumulator is itself.
local function copy_contents(c)
  if type(c) ~= "table" then
    return c
  end
  local out = {}
  for i = 1, #c do
    out[i] = c[i]
  end
  return out
end

---The timers of a subtask in pop order per domain, event time first: { domain, time, kid,
---start, stop }.
function M.timers(inst)
  local out = {}
  for _, d in ipairs({ EVENT, PROCESSING }) do
    local buf, n = util.timers_list(inst.timers, d)
    for i = 0, n - 1 do
      local t = buf[i]
      out[#out + 1] = { domain = d == EVENT and "event" or "processing", time = t.time_ms,
                        kid = t.key, start = t.start, stop = t.stop }
    end
  end
  return out
end

---Every window of a subtask as plain values: { kid, start, stop, sstart, sstop, contents,
---timestamps, count, trigger_state, window_state, fired, retired } (keep(kid) chooses keys;
---without with_contents, no contents and timestamps).
---Merging windows are the in-flight ones with their state window's contents; a slot of a
---merging node that is no in-flight window nor state window (a window retired as late by a
---merge) is listed retired.
function M.windows(node, inst, keep, with_contents)
  local out, used = {}, {}
  local store = inst.store
  local function add(kid, start, stop, sstart, sstop, retired)
    local slot = C.weir_store_find(store, kid, start, stop)
    local sslot = C.weir_store_find(store, kid, sstart, sstop)
    used[slot], used[sslot] = true, true
    out[#out + 1] = {
      kid = kid, start = start, stop = stop, sstart = sstart, sstop = sstop,
      contents = with_contents and sslot >= 0 and copy_contents(inst.contents[sslot]) or nil,
      timestamps = with_contents and sslot >= 0 and copy_contents(inst.stamps[sslot]) or nil,
      count = sslot >= 0 and C.weir_store_count(store, sslot) or 0,
      trigger_state = slot >= 0 and trigger_state(node, inst, slot) or nil,
      window_state = slot >= 0 and inst.wstate[slot] or nil,
      fired = sslot >= 0 and inst.fires[sslot] ~= nil,
      retired = retired or nil,
    }
  end
  if node.assigner.merging then
    for kid, list in pairs(inst.msets) do
      if keep(kid) then
        for _, e in ipairs(list) do
          add(kid, e.start, e.stop, e.sstart, e.sstop)
        end
      end
    end
  end
  for slot, w in pairs(inst.wins) do
    local kid = inst.wkid[slot]
    if not used[slot] and keep(kid) then
      add(kid, w.start, w.stop, w.start, w.stop, node.assigner.merging)
    end
  end
  return out
end

---The cleanup time of a window ending at stop (exclusive).
function M.cleanup_time(node, stop)
  return wc.cleanup_time(node, stop == INF and INF or stop - 1)
end

return M
