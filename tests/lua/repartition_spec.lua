-- Specs for weir.repartition's pieces (the mock-cluster runs are tests/cli/scale_repart*.sh):
-- the record's encoding (the checkpoint codec: a weir.record_type record and json.null come
-- back), the control records into a repartition partition's valve (its watermark is the
-- minimum over every upstream partition, idle ones left out, a silent one holds it back, a
-- lower one is ignored), the combined valve over the owned partitions feeding the keyed
-- operator's channel, a record sent again (same upstream partition and offset) dropped, and a
-- partition's snapshot round trip (channels and what was taken).
local spec = require("spec")
local ffi = require("ffi")
local buffer = require("string.buffer")
local weir = require("weir")
local C = require("weir.ffi")
local ckvalue = require("weir.ckvalue")
local repartition = require("weir.repartition")
local it, eq = spec.it, spec.eq
local INF = math.huge

it("the topic is NAME-repartition-UID", function()
  eq(repartition.topic("g", { ckpt_uid = "window-1" }), "g-repartition-window-1")
end)

it("a record goes through the checkpoint codec", function()
  local Pt = weir.record_type("rp_spec_pt", { "int32_t x", "double y" })
  local r = Pt()
  r.x, r.y = 7, 2.5
  local v = { a = r, n = weir.json.null, s = "x", t = { 1, 2 } }
  local kv = ckvalue.keep(v, "record")
  local back = ckvalue.thaw(buffer.decode(buffer.encode({ kv, 1234, 2, 17, 1 }))[1])
  eq(back.a.x, 7)
  eq(back.a.y, 2.5)
  eq(back.n == weir.json.null, true)
  eq(back.s, "x")
  eq(back.t[2], 2)
  local kf, why = ckvalue.keep({ f = function() end }, "record")
  eq(kf, nil)
  eq(type(why), "string")
end)

-- a repartition edge of P upstream partitions and R repartition partitions, as setup makes it
local function edge(P, R)
  local got = {}
  local inst = { node = { id = 1, on_watermark = function(_, w) got[#got + 1] = w end },
                 valve = ffi.gc(C.weir_valve_new(1), C.weir_valve_free), watermark = -INF,
                 wm_targets = {} }
  local records = {}
  local e = { P = P, R = R, valves = {}, seen = {}, owned = {}, finished = {},
              rv = ffi.gc(C.weir_valve_new(R), C.weir_valve_free), targets = { { inst, 0 } },
              inner = function(_, v, ts) records[#records + 1] = { v, ts } end }
  e.down = { wm_targets = e.targets }
  local node = { rep_of = {} }
  local routes = {}
  for r = 0, R - 1 do
    C.weir_valve_status(e.rv, r, 1)
    e.valves[r] = ffi.gc(C.weir_valve_new(P), C.weir_valve_free)
    node.rep_of[10 + r] = { e = e, r = r }
    routes[r] = repartition.route(e, r)
  end
  return e, node, routes, got, records
end

local function control(route, u, w, idle)
  local s = buffer.encode({ u, w, idle })
  route({ ptr = s, len = #s }, { key = "wm/" .. u })
end

local function record(route, v, ts, u, off, n)
  local s = buffer.encode({ v, ts, u, off, n })
  route({ ptr = s, len = #s }, { key = nil })
end

it("a partition's watermark is the minimum over every upstream partition", function()
  local e, node, routes, got = edge(3, 2)
  repartition.assign_slot(node, 10, nil) -- owns r = 0 only
  control(routes[0], 0, 100, false)
  control(routes[0], 1, 200, false)
  eq(#got, 0) -- upstream partition 2 has said nothing: it holds r back
  control(routes[0], 2, 150, false)
  eq(got[#got], 100)
  control(routes[0], 0, 300, false)
  eq(got[#got], 150)
  control(routes[0], 0, 50, false) -- a lower one (a new owner's) is ignored
  eq(got[#got], 150)
  control(routes[0], 2, 160, true) -- idle: left out
  eq(got[#got], 200)
  -- r = 1 assigned with no snapshot: its upstream partitions hold it (and the operator) back
  repartition.assign_slot(node, 11, nil)
  control(routes[0], 1, 400, false)
  eq(got[#got], 200)
  control(routes[1], 0, 1000, false)
  control(routes[1], 1, 1000, false)
  control(routes[1], 2, 1000, false)
  eq(C.weir_valve_output(e.valves[1]), 1000)
  eq(got[#got], 300) -- the minimum over the owned partitions
  repartition.give_up_slot(node, 10) -- r = 0 left out: r = 1 alone
  eq(got[#got], 1000)
  control(routes[1], 0, 2000, false)
  control(routes[1], 1, 2000, false)
  control(routes[1], 2, 2000, false)
  eq(got[#got], 2000)
  control(routes[1], 0, INF, false)
  control(routes[1], 1, INF, false)
  control(routes[1], 2, INF, false)
  eq(got[#got], INF)
end)

it("records reach the operator, once per upstream partition and offset", function()
  local _, node, routes, _, records = edge(2, 1)
  repartition.assign_slot(node, 10, nil)
  record(routes[0], "a", 5, 0, 10, 1)
  record(routes[0], "b", 6, 0, 10, 2) -- a second record from the same offset (flat_map)
  record(routes[0], "c", 7, 1, 3, 1)
  record(routes[0], "a", 5, 0, 10, 1) -- sent again after a restore upstream: dropped
  record(routes[0], "b", 6, 0, 10, 2)
  record(routes[0], "d", 8, 0, 11, 1)
  record(routes[0], "t", 9, -1, -1, 0) -- not from a source record (a timer): always taken
  eq(#records, 5)
  eq(records[1][1], "a")
  eq(records[2][1], "b")
  eq(records[3][1], "c")
  eq(records[4][1], "d")
  eq(records[4][2], 8)
  eq(records[5][1], "t")
end)

it("a partition's snapshot keeps its channels and what it took", function()
  local e, node, routes, _, records = edge(2, 1)
  repartition.assign_slot(node, 10, nil)
  control(routes[0], 0, 100, false)
  control(routes[0], 1, 70, true)
  record(routes[0], "a", 5, 0, 10, 1)
  local snap = repartition.snapshot_slot(node, 10)
  snap = buffer.decode(buffer.encode(snap)) -- as the state topic keeps it
  local e2, node2, routes2, got2, records2 = edge(2, 1)
  local w, idle = repartition.assign_slot(node2, 10, snap)
  eq(w, 100)
  eq(idle, false)
  eq(C.weir_valve_channel_watermark(e2.valves[0], 1), 70)
  eq(bit.band(C.weir_valve_channel_state(e2.valves[0], 1), 1), 0) -- still idle
  record(routes2[0], "a", 5, 0, 10, 1) -- taken before the snapshot: dropped
  record(routes2[0], "b", 6, 0, 11, 1)
  eq(#records2, 1)
  eq(records2[1][1], "b")
  control(routes2[0], 0, 120, false)
  eq(got2[#got2], 120)
  eq(#records, 1)
  eq(e.R, 1)
end)
spec.finish()
