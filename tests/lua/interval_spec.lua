-- Specs for weir.interval (the interval join) and its builder in weir.join. The cases marked
-- "Flink:" are ported from Flink's IntervalJoinOperatorTest with their inputs and expected
-- outputs (Flink compares as sets: so does same_set; weir's order is checked on its own).
local spec = require("spec")
local weir = require("weir")
local keyed = require("weir.keyed")
local it, eq, raises = spec.it, spec.eq, spec.raises

local function write(path, text)
  local fh = assert(io.open(path, "wb"))
  fh:write(text)
  fh:close()
end

-- Flink's two-input harness: steps are {"l", ts} / {"r", ts} (processElement1/2 of a record
-- at ts, all under one key), {"wl", t} / {"wr", t} (processWatermark1/2) and {"probe"} (reads
-- the join's buffers then). Step i happens at virtual time i (two replays on one clock).
-- Returns the pairs as "l,r@ts", the probes (the buffers' timestamps, sorted) and the late
-- side outputs.
local function harness(lo, lo_inc, hi, hi_inc, steps, opts)
  opts = opts or {}
  local left, right = {}, {}
  for i, s in ipairs(steps) do
    local kind, t = s[1], s[2] or 0
    local line = ("@%d %s %d"):format(i, (kind == "l" or kind == "r") and "el"
      or kind == "probe" and "probe" or "wm", t)
    if s[3] then -- a record's key: "key" without one
      line = ("@%d el %s %d"):format(i, s[3], t)
    end
    if kind == "l" or kind == "wl" or kind == "probe" then
      left[#left + 1] = line
    else
      right[#right + 1] = line
    end
  end
  -- both inputs last to the end (an input that ends sends +inf, as a finished source does)
  left[#left + 1] = ("@%d end 0"):format(#steps + 1)
  right[#right + 1] = ("@%d end 0"):format(#steps + 1)
  local lp, rp = os.tmpname(), os.tmpname()
  write(lp, table.concat(left, "\n") .. "\n")
  write(rp, table.concat(right, "\n") .. "\n")
  local env = weir.env()
  local strategy = weir.watermarks.custom{
    on_event = function(_, v, _, out)
      local kind, t = v:match("^(%a+) (%-?%d+)$")
      if kind == "wm" then out:emit_watermark(tonumber(t)) end
    end,
  }:with_timestamp_assigner(function(v) return tonumber(v:match("(%-?%d+)$")) end)
  local probes, join_node = {}, nil
  local function probe(v)
    if v:sub(1, 5) == "probe" then
      local job = env.running_job
      local got = { left_buffer = {}, right_buffer = {} }
      for _, inst in ipairs(join_node.instances) do
        for _, e in ipairs(keyed.entries(join_node, inst)) do
          for t in pairs(e.value) do
            table.insert(got[e.state], t)
          end
        end
      end
      table.sort(got.left_buffer)
      table.sort(got.right_buffer)
      probes[#probes + 1] = got
      if opts.on_probe then
        opts.on_probe(join_node, join_node.instances[1])
      end
      assert(job)
    end
    return v:sub(1, 2) == "el"
  end
  local function side(path, name)
    return env:replay(path):assign_timestamps_and_watermarks(strategy):filter(probe)
      :map(function(v)
        return { ts = tonumber(v:match("(%-?%d+)$")), source = name,
                 key = v:match("^el (%a+) ") or "key" }
      end)
      :key_by(function(v) return v.key end)
  end
  local ij = side(lp, "lhs"):interval_join(side(rp, "rhs")):between(lo, hi)
  if not lo_inc then ij:lower_bound_exclusive() end
  if not hi_inc then ij:upper_bound_exclusive() end
  local lt, rt = weir.output_tag("left_late"), weir.output_tag("right_late")
  if opts.late_tags then
    ij:side_output_left_late_data(lt):side_output_right_late_data(rt)
  end
  local got, late = {}, { left = {}, right = {} }
  local joined = ij:process(opts.fn or function(l, r, _, out) out({ l, r }) end)
  join_node = joined.ports[1].node
  joined:sink(function(p, ctx)
    got[#got + 1] = ("%d,%d@%d"):format(p[1].ts, p[2].ts, ctx:timestamp())
  end)
  if opts.late_tags then
    joined:get_side_output(lt):sink(function(v, ctx)
      late.left[#late.left + 1] = ("%s:%d@%d"):format(v.source, v.ts, ctx:timestamp())
    end)
    joined:get_side_output(rt):sink(function(v, ctx)
      late.right[#late.right + 1] = ("%s:%d@%d"):format(v.source, v.ts, ctx:timestamp())
    end)
  end
  local ok, err = pcall(env.execute, env)
  os.remove(lp)
  os.remove(rp)
  if not ok then
    error(err, 0)
  end
  return got, probes, late, env
end

local function sorted(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  return c
end

-- Flink's streamRecordOf(l, r): the pair and max(l, r)
local function pairs_of(list)
  local out = {}
  for i, p in ipairs(list) do
    out[i] = ("%d,%d@%d"):format(p[1], p[2], math.max(p[1], p[2]))
  end
  return sorted(out)
end

-- processElementsAndWatermarks(from, to), left first (lhsFasterThanRhs) or right first
local function elements_and_watermarks(from, to, lhs_first)
  local steps = {}
  local function side(s, w)
    for i = from, to do
      steps[#steps + 1] = { s, i }
      steps[#steps + 1] = { w, i }
    end
  end
  if lhs_first then
    side("l", "wl")
    side("r", "wr")
  else
    side("r", "wr")
    side("l", "wl")
  end
  return steps
end

local function bounds_case(name, lo, lo_inc, hi, hi_inc, want)
  for _, lhs_first in ipairs({ true, false }) do
    it(("Flink: %s (%s first)"):format(name, lhs_first and "lhs" or "rhs"), function()
      local got = harness(lo, lo_inc, hi, hi_inc, elements_and_watermarks(1, 4, lhs_first))
      eq(sorted(got), pairs_of(want))
    end)
  end
end

spec.describe("interval join", function()
  bounds_case("testNegativeInclusiveAndNegativeInclusive", -2, true, -1, true,
    { { 2, 1 }, { 3, 1 }, { 3, 2 }, { 4, 2 }, { 4, 3 } })
  bounds_case("testNegativeInclusiveAndPositiveInclusive", -1, true, 1, true,
    { { 1, 1 }, { 1, 2 }, { 2, 1 }, { 2, 2 }, { 2, 3 }, { 3, 2 }, { 3, 3 }, { 3, 4 }, { 4, 3 },
      { 4, 4 } })
  bounds_case("testPositiveInclusiveAndPositiveInclusive", 1, true, 2, true,
    { { 1, 2 }, { 1, 3 }, { 2, 3 }, { 2, 4 }, { 3, 4 } })
  bounds_case("testNegativeExclusiveAndNegativeExlusive", -3, false, -1, false,
    { { 3, 1 }, { 4, 2 } })
  bounds_case("testNegativeExclusiveAndPositiveExlusive", -1, false, 1, false,
    { { 1, 1 }, { 2, 2 }, { 3, 3 }, { 4, 4 } })
  bounds_case("testPositiveExclusiveAndPositiveExlusive", 1, false, 3, false,
    { { 1, 3 }, { 2, 4 } })
  -- lhs + 1 <= rhs < lhs + 3, and the same bounds mirrored
  bounds_case("testImplementationMirrorsCorrectly", 1, true, 3, false,
    { { 1, 2 }, { 1, 3 }, { 2, 3 }, { 2, 4 }, { 3, 4 } })
  bounds_case("testImplementationMirrorsCorrectly (mirrored)", -3, false, -1, true,
    { { 2, 1 }, { 3, 1 }, { 3, 2 }, { 4, 2 }, { 4, 3 } })

  local function cleanup_case(name, lo, lo_inc, hi, hi_inc, want)
    it("Flink: " .. name, function()
      local steps = {}
      for i = 1, 5 do steps[#steps + 1] = { "l", i } end
      for i = 1, 5 do steps[#steps + 1] = { "r", i } end
      for _, w in ipairs({ 1, 4, 6 }) do
        steps[#steps + 1] = { "wl", w }
        steps[#steps + 1] = { "wr", w }
        steps[#steps + 1] = { "probe" }
      end
      local _, probes = harness(lo, lo_inc, hi, hi_inc, steps)
      eq(probes, want)
    end)
  end
  cleanup_case("testStateCleanupNegativeInclusiveNegativeInclusive", -1, true, 0, true, {
    { left_buffer = { 2, 3, 4, 5 }, right_buffer = { 1, 2, 3, 4, 5 } },
    { left_buffer = { 5 }, right_buffer = { 4, 5 } },
    { left_buffer = {}, right_buffer = {} } })
  cleanup_case("testStateCleanupNegativePositiveNegativeExlusive", -2, false, 1, false, {
    { left_buffer = { 2, 3, 4, 5 }, right_buffer = { 1, 2, 3, 4, 5 } },
    { left_buffer = { 5 }, right_buffer = { 4, 5 } },
    { left_buffer = {}, right_buffer = {} } })
  cleanup_case("testStateCleanupPositiveInclusivePositiveInclusive", 0, true, 1, true, {
    { left_buffer = { 1, 2, 3, 4, 5 }, right_buffer = { 2, 3, 4, 5 } },
    { left_buffer = { 4, 5 }, right_buffer = { 5 } },
    { left_buffer = {}, right_buffer = {} } })
  cleanup_case("testStateCleanupPositiveExlusivePositiveExclusive", -1, false, 2, false, {
    { left_buffer = { 1, 2, 3, 4, 5 }, right_buffer = { 2, 3, 4, 5 } },
    { left_buffer = { 4, 5 }, right_buffer = { 5 } },
    { left_buffer = {}, right_buffer = {} } })

  it("Flink: testRestoreFromSnapshot (buffers and cleanup timers through keyed.entries, "
    .. "keyed.timers and keyed.restore)", function()
    local entries, timers
    local got = harness(-1, true, 1, true, {
      { "l", 1 }, { "wl", 1 }, { "r", 1 }, { "wr", 1 }, { "l", 2 }, { "wl", 2 }, { "r", 2 },
      { "wr", 2 }, { "l", 3 }, { "wl", 3 }, { "r", 3 }, { "wr", 3 }, { "probe" } }, {
      on_probe = function(node, inst)
        -- a snapshot's logical view, copied (the buffers are the state's own tables)
        entries, timers = {}, keyed.timers(node, inst)
        for i, e in ipairs(keyed.entries(node, inst)) do
          local v = {}
          for t, list in pairs(e.value) do
            v[t] = { unpack(list) }
          end
          entries[i] = { key = e.key, state = e.state, value = v }
        end
      end })
    eq(sorted(got), pairs_of({ { 1, 1 }, { 1, 2 }, { 2, 1 }, { 2, 2 }, { 2, 3 }, { 3, 2 },
      { 3, 3 } }))
    local restored = false
    got = harness(-1, true, 1, true, { { "probe" }, { "l", 4 }, { "wl", 4 }, { "r", 4 },
      { "wr", 4 } }, {
      on_probe = function(node, inst)
        if not restored then
          keyed.restore(node, inst, entries, timers)
          restored = true
        end
      end })
    eq(sorted(got), pairs_of({ { 3, 4 }, { 4, 3 }, { 4, 4 } }))
  end)

  it("a timestamp's records: one or several, a sequence in snapshots and after a restore",
    function()
      local entries, timers
      harness(-5, true, 5, true, { { "l", 1 }, { "l", 1 }, { "l", 1 }, { "l", 2 }, { "r", 9 },
        { "probe" } }, {
        on_probe = function(node, inst)
          entries, timers = {}, keyed.timers(node, inst)
          for i, e in ipairs(keyed.entries(node, inst)) do
            local v = {}
            for t, list in pairs(e.value) do
              local srcs = {}
              for j, x in ipairs(list) do srcs[j] = x.source .. x.ts end
              v[t] = srcs
            end
            entries[i] = { key = e.key, state = e.state, value = e.value, shown = v }
          end
        end })
      eq(entries[1].state, "left_buffer")
      eq(entries[1].shown, { [1] = { "lhs1", "lhs1", "lhs1" }, [2] = { "lhs2" } })
      eq(entries[2].shown, { [9] = { "rhs9" } })
      local restored = false
      local got = harness(-5, true, 5, true, { { "probe" }, { "r", 3 }, { "l", 4 } }, {
        on_probe = function(node, inst)
          if not restored then
            keyed.restore(node, inst, entries, timers)
            restored = true
          end
        end })
      eq(got, { "1,3@3", "1,3@3", "1,3@3", "2,3@3", "4,3@4", "4,9@9" })
    end)

  it("restored cleanup timers keep their side", function()
    local _, probes = harness(0, true, 0, true, { { "l", 5 }, { "r", 7 }, { "probe" } }, {
      on_probe = function(node, inst)
        local ts = keyed.timers(node, inst)
        local sides = {}
        for _, t in ipairs(ts) do sides[#sides + 1] = t.time .. ":" .. tostring(t.ns) end
        eq(sides, { "5:1", "7:2" })
      end })
    eq(probes[1], { left_buffer = { 5 }, right_buffer = { 7 } })
  end)

  -- A key whose buffers the cleanup empties has no state (as in Flink), but keeps its row for
  -- its next records; beyond interval.KEEP_ROWS such rows, one is dropped at the second
  -- watermark without records for its key.
  it("an emptied key keeps its row; beyond the kept rows' cap, until idle for a watermark",
    function()
    local C = require("weir.ffi")
    local rows = {}
    local function count_rows(_, inst)
      local n, key = 0, require("ffi").new("double[1]")
      for r = 0, C.weir_kstate_capacity(inst.kstate) - 1 do
        if C.weir_kstate_at(inst.kstate, r, key) ~= nil then n = n + 1 end
      end
      rows[#rows + 1] = n
    end
    local function wm(steps, t)
      steps[#steps + 1] = { "wl", t }
      steps[#steps + 1] = { "wr", t }
    end
    local steps = { { "l", 1, "a" }, { "r", 1, "a" }, { "l", 1, "b" } }
    wm(steps, 5) -- a's buffers emptied (b's left one too)
    steps[#steps + 1] = { "probe" }
    steps[#steps + 1] = { "r", 10, "a" } -- a busy again: joins no one
    steps[#steps + 1] = { "l", 10, "a" }
    wm(steps, 20) -- emptied again
    steps[#steps + 1] = { "probe" }
    wm(steps, 30) -- b idle since its emptying two watermarks ago: dropped
    steps[#steps + 1] = { "probe" }
    wm(steps, 40) -- a too
    steps[#steps + 1] = { "probe" }
    steps[#steps + 1] = { "l", 50, "a" } -- a row again for a
    steps[#steps + 1] = { "r", 50, "a" }
    steps[#steps + 1] = { "probe" }
    local interval = require("weir.interval")
    local keep = interval.KEEP_ROWS
    local empty = { left_buffer = {}, right_buffer = {} }
    local want = { empty, empty, empty, empty, { left_buffer = { 50 }, right_buffer = { 50 } } }
    for _, cap in ipairs({ 0, 1, keep }) do
      rows = {}
      interval.KEEP_ROWS = cap
      local ok, got, probes = pcall(harness, 0, true, 0, true, steps, { on_probe = count_rows })
      interval.KEEP_ROWS = keep
      assert(ok, got)
      eq(got, { "1,1@1", "10,10@10", "50,50@50" })
      eq(probes, want)
      eq(rows, cap == 0 and { 2, 2, 1, 0, 1 } or cap == 1 and { 2, 2, 1, 1, 1 }
        or { 2, 2, 2, 2, 2 })
    end
  end)

  it("Flink: testDiscardsLateData (dropped and counted)", function()
    local got, _, _, env = harness(-1, true, 1, true, {
      { "l", 1 }, { "r", 1 }, { "l", 2 }, { "r", 2 }, { "l", 3 }, { "r", 3 }, { "wl", 3 },
      { "wr", 3 }, { "l", 1 }, { "l", 4 }, { "r", 4 }, { "l", 5 }, { "r", 5 } })
    eq(sorted(got), pairs_of({ { 1, 1 }, { 1, 2 }, { 2, 1 }, { 2, 2 }, { 2, 3 }, { 3, 2 },
      { 3, 3 }, { 3, 4 }, { 4, 3 }, { 4, 4 }, { 4, 5 }, { 5, 4 }, { 5, 5 } }))
    local m
    for label, t in pairs(env.final_metrics) do
      if label:find("^interval_join") then m = t end
    end
    eq(m.late_dropped, 1)
  end)

  it("Flink: testLateData (side outputs, with the record's own timestamp)", function()
    local got, _, late = harness(-1, true, 1, true, {
      { "l", 3 }, { "r", 3 }, { "wl", 3 }, { "wr", 3 }, { "l", 4 }, { "r", 4 }, { "l", 1 },
      { "r", 2 }, { "l", 5 }, { "r", 5 } }, { late_tags = true })
    eq(sorted(got), pairs_of({ { 3, 3 }, { 3, 4 }, { 4, 3 }, { 4, 4 }, { 4, 5 }, { 5, 4 },
      { 5, 5 } }))
    eq(late, { left = { "lhs:1@1" }, right = { "rhs:2@2" } })
  end)

  it("Flink: testContextCorrectLeftTimestamp, RightTimestamp, testReturnsCorrectTimestamp",
    function()
      local checked = 0
      harness(-1, true, 1, true, elements_and_watermarks(1, 4, true), {
        fn = function(l, r, ctx, out)
          assert(ctx:left_timestamp() == l.ts and ctx:right_timestamp() == r.ts)
          assert(ctx:timestamp() == math.max(l.ts, r.ts))
          checked = checked + 1
          out({ l, r })
        end })
      eq(checked, 10)
    end)

  it("Flink: testFailsWithNoTimestampsLeft / Right", function()
    for _, first in ipairs({ true, false }) do
      local env = weir.env()
      local ts = weir.watermarks.monotonous():with_timestamp_assigner(function(v) return v end)
      local a = env:from_elements(1)
      local b = env:from_elements(2)
      if first then b = b:assign_timestamps_and_watermarks(ts) else
        a = a:assign_timestamps_and_watermarks(ts) end
      a:key_by(function() return 0 end):interval_join(b:key_by(function() return 0 end))
        :between(0, 0):process(function() end):print()
      raises(function() env:execute() end, "interval_join", "the record has no timestamp")
    end
  end)

  it("emits matched buckets in ascending timestamp order, each bucket in arrival order",
    function()
      local got = harness(-10, true, 10, true, {
        { "r", 5 }, { "r", 3 }, { "r", 5 }, { "r", 1 }, { "l", 4 } })
      eq(got, { "4,1@4", "4,3@4", "4,5@5", "4,5@5" }) -- three timestamps: the general path
      got = harness(-10, true, 10, true, { { "r", 5 }, { "r", 3 }, { "l", 4 } })
      eq(got, { "4,3@4", "4,5@5" }) -- two
      got = harness(-10, true, 10, true, { { "r", 3 }, { "r", 5 }, { "r", 30 }, { "l", 4 } })
      eq(got, { "4,3@4", "4,5@5" }) -- three, one out of range
      -- a narrow interval is probed ms by ms: the bounds' exclusivity holds there too
      got = harness(-2, false, 2, true, { { "r", 2 }, { "r", 3 }, { "r", 6 }, { "r", 5 },
        { "l", 4 } })
      eq(got, { "4,3@4", "4,5@5", "4,6@6" })
      got = harness(-2, true, 2, false, { { "l", 6 }, { "l", 2 }, { "l", 3 }, { "l", 5 },
        { "r", 4 } })
      eq(got, { "3,4@4", "5,4@5", "6,4@6" }) -- r in [l - 2, l + 2): l in (2, 6]
      -- a wide one (more than 64 ms) gathers and sorts the buffered timestamps in range
      got = harness(-100, true, 100, true, { { "r", 150 }, { "r", 80 }, { "r", 150 },
        { "r", 107 }, { "r", 300 }, { "l", 104 } })
      eq(got, { "104,80@104", "104,107@107", "104,150@150", "104,150@150" })
    end)

  it("a rich join function: open and per-subtask self", function()
    local got = harness(0, true, 0, true, { { "l", 1 }, { "r", 1 } }, {
      fn = { open = function(self) self.n = 100 end,
             process = function(self, l, r, _, out)
               self.n = self.n + 1
               out({ { ts = l.ts + self.n }, r })
             end } })
    eq(got, { "102,1@1" })
  end)

  it("a subtask gets every field before records flow; its context too", function()
    local before, ctx_before
    harness(-5, true, 5, true, { { "probe" }, { "l", 1 }, { "r", 2 }, { "r", 3 }, { "r", 4 },
      { "l", 3 }, { "wl", 9 }, { "wr", 9 }, { "l", 20 }, { "probe" } }, {
      on_probe = function(node, inst)
        if not before then
          before, ctx_before = {}, {}
          for k in pairs(inst) do before[k] = true end
          for k in pairs(inst.ij_ctx) do ctx_before[k] = true end
          return
        end
        for k in pairs(inst) do
          assert(before[k], "field added while records flowed: " .. tostring(k))
        end
        for k in pairs(inst.ij_ctx) do
          assert(ctx_before[k], "context field added while records flowed: " .. tostring(k))
        end
        assert(node)
      end })
    eq(before ~= nil, true)
  end)

  it("rejects bad arguments naming the script line", function()
    local env = weir.env()
    local a, b = env:from_elements(1), env:from_elements(2)
    local ka, kb = a:key_by(function(v) return v end), b:key_by(function(v) return v end)
    raises(function() a:interval_join(kb) end, "interval_spec.lua:",
      "interval_join: applies to a keyed stream")
    raises(function() ka:interval_join(b) end, "the other stream must be keyed")
    raises(function() ka:interval_join(kb):between("5s", "2s") end, "interval_spec.lua:",
      "between(\"5s\", \"2s\"): the lower bound is above the upper bound")
    raises(function() ka:interval_join(kb):process(function() end) end,
      "interval_join: process: call between(lo, hi) first")
    raises(function() ka:interval_join(kb):between(0, 1):process(42) end,
      "expected a function or a table with a 'process' method")
    raises(function() ka:interval_join(kb):betwen(0, 1) end, "IntervalJoin has no method")
    raises(function() ka:interval_join(kb):between(0, 1):side_output_left_late_data("x") end,
      "side_output_left_late_data: expected an output tag")
    env.executed = true -- built only for its build errors
  end)
end)

spec.finish()
