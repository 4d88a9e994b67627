-- Specs for weir.aggstate, the home of the fast window operator's state: key ids, the one drop
-- (no piece outlives its window), and the timers listed in pop order with their windows.
-- (tests/lua/winstate_spec.lua checks the whole enumeration against the operator's fires.)
local ffi = require("ffi")
local spec = require("spec")
local aggstate = require("weir.aggstate")
local timerq = require("weir.timerq")
local C = require("weir.ffi")
local it, eq = spec.it, spec.eq

local function node(size, slide, lateness)
  return { keyed = true, assigner = { size = size, slide = slide }, lateness = lateness or 0,
           user_fn = {} }
end

it("a whole-number key is its own id + 1; any other key is interned from 2^30 on", function()
  local inst = {}
  aggstate.init(inst, 1)
  local intern = aggstate.interner(node(10, 10))
  for _, k in ipairs({ 0, 5, 2 ^ 30 - 2, "a", -1, 2.5, 2 ^ 30, -0.0, { 1, "x" } }) do
    local kid = intern(inst, k)
    eq(kid < aggstate.DIRECT, type(k) == "number" and k >= 0 and k < 2 ^ 30 - 1 and k % 1 == 0
      and 1 / k > 0)
    eq(aggstate.key_of(inst, kid), k)
    eq(intern(inst, k), kid)
  end
end)

it("drop takes every piece of a tumbling window: its id, accumulator, count, window_state",
  function()
    local inst = {}
    aggstate.init(inst, 1)
    local id = C.weir_wintab_add(inst.wtab, 3, 20)
    inst.accs[id], inst.counts[id] = 7, 2
    inst.last_start[3], inst.last_id[3] = 20, id
    aggstate.window_state(inst, 3, 20, 30).x = 1
    aggstate.drop(inst, 1, 3, 20, 10)
    eq({ C.weir_wintab_find(inst.wtab, 3, 20), inst.accs[id], inst.counts[id],
         inst.last_start[3], next(inst.wstate), C.weir_store_find(inst.wstore, 3, 20, 30) },
      { -1, nil, nil, nil, nil, -1 })
  end)

it("a window's drop finds its window_state by the count of them, however they were made",
  function()
    local inst = {}
    aggstate.init(inst, 1)
    aggstate.window_state(inst, 3, 20, 30).x = 1
    aggstate.window_state(inst, 3, 20, 30).y = 2 -- the same one again: not counted twice
    eq(inst.ws_n, 1)
    -- as the restores write them: straight into wstate, by the store's slot
    inst.wstate[C.weir_store_slot(inst.wstore, 4, 20, 30)] = { z = 3 }
    eq(inst.ws_n, 2)
    aggstate.drop_window_state(inst, 5, 20, 10) -- no such window: nothing dropped
    eq(inst.ws_n, 2)
    aggstate.drop_window_state(inst, 3, 20, 10)
    eq({ inst.ws_n, C.weir_store_find(inst.wstore, 3, 20, 30) }, { 1, -1 })
    aggstate.drop_window_state(inst, 4, 20, 10)
    eq({ inst.ws_n, next(inst.wstate), C.weir_store_find(inst.wstore, 4, 20, 30) },
      { 0, nil, -1 })
  end)

it("drop takes a sliced window's slice with its count, pending hits flushed", function()
  local inst = {}
  aggstate.init(inst, 3)
  local fresh = ffi.new("int32_t[1]")
  local cell = C.weir_slices_acc(inst.slices, 4, 10, fresh)
  cell[0] = 5
  inst.sl_start[4], inst.sl_cell[4], inst.sl_hits[4] = 10, cell, 3
  local n = node(30, 10)
  eq(#aggstate.slices(n, inst, function() return true end), 1)
  aggstate.drop(inst, 3, 4, 10, 30)
  eq({ inst.sl_start[4], #aggstate.slices(n, inst, function() return true end) }, { nil, 0 })
end)

it("timers: pop order; a key id fires at the window's end, a negated one cleans it up",
  function()
    local inst = {}
    aggstate.init(inst, 1)
    local n = node(10, 10, 5)
    timerq.add(inst.tq, 29, 2)  -- window [20, 30) of key id 2 fires at 29
    timerq.add(inst.tq, 19, 7)  -- [10, 20) of 7
    timerq.add(inst.tq, 24, -7) -- [10, 20) of 7 cleaned up at 19 + 5
    timerq.add(inst.tq, 19, 3)
    eq(aggstate.timers(n, inst), {
      { domain = "event", time = 19, kid = 7, start = 10, stop = 20 },
      { domain = "event", time = 19, kid = 3, start = 10, stop = 20 },
      { domain = "event", time = 24, kid = 7, start = 10, stop = 20 },
      { domain = "event", time = 29, kid = 2, start = 20, stop = 30 },
    })
  end)

spec.finish()
