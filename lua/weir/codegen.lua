-- weir.codegen: the per-operator code weir generates. Every template here is compiled with
-- load() once per operator (one prototype per operator, so each gets its own JIT traces) and
-- instantiated per call with its upvalues; nothing else in weir builds code from text.
-- Owns: TEMPLATES (operators, sinks, exchanges, fan-outs, source drivers, the timestamps
-- operator), the rules that turn a template into source (CALL, the running-operator store),
-- and the factory cache (job.factories).
local M = {}
jit.off(true, true) -- set-up code only: see "Set-up code" at the end

-- What a process context's ts or key holds for nil (weir.run's ProcessContext reads it back).
local NONE = setmetatable({}, { __tostring = function() return "none" end })
M.NONE = NONE

-- Every operator has ONE generated push function, push(st, v, ts, key), shared by its
-- subtasks: st is the subtask index and per-subtask state lives in 0-based arrays. Calls
-- between operators are therefore monomorphic (an exchange computes st and calls the same
-- function), which keeps the whole chain in one JIT trace.
-- They call the next operator with a plain call, not a tail call: LuaJIT counts a trace's tail
-- calls towards its loop unroll limit (15), so a long chain, or a window fire's side trace
-- through everything downstream, aborted ("loop unroll limit reached") at a `return emit(...)`.

local TEMPLATES = {
  map = [[
local f, objs, emit, fail_nil, is_nil = ...
return function(st, v, ts, key)
  local r = CALL(v)
  if is_nil(r) then fail_nil() end -- not a tail call: the handler needs this frame
  emit(st, r, ts)
end]],
  filter = [[
local f, objs, emit = ...
return function(st, v, ts, key)
  if CALL(v) then emit(st, v, ts) end
end]],
  flat_map = [[
local f, objs, emit, is_nil = ...
local cur_st, cur_ts = 0, nil
local function out(x)
  if is_nil(x) then error("out(nil): records cannot be nil", 2) end
  emit(cur_st, x, cur_ts)
  OP_[0] = OPID_ -- the user function runs on
end
return function(st, v, ts, key)
  cur_st, cur_ts = st, ts
  CALL(v, out)
end]],
  process = [[
local f, objs, emit, ctxs, is_nil, NONE = ...
local cur_st, cur_ts = 0, nil
local function out(x)
  if is_nil(x) then error("out(nil): records cannot be nil", 2) end
  emit(cur_st, x, cur_ts)
  OP_[0] = OPID_ -- the user function runs on
end
return function(st, v, ts, key)
  local ctx = ctxs[st]
  -- ts or key nil: NONE (a field that keeps its slot; see weir.run)
  if ts == nil then ctx.ts = NONE else ctx.ts = ts end
  if key == nil then ctx.key = NONE else ctx.key = key end
  cur_st, cur_ts = st, ts
  CALL(v, ctx, out)
end]],
  -- a keyed process function (weir.keyed): the key's id and state row, then the user's call
  keyed_process = [[
local f, objs, insts, intern, C, emit, is_nil = ...
local cur_st, cur_ts = 0, nil
local function out(x)
  if is_nil(x) then error("out(nil): records cannot be nil", 2) end
  emit(cur_st, x, cur_ts)
  OP_[0] = OPID_ -- the user function runs on
end
return function(st, v, ts, key)
  local inst = insts[st]
  local kid = intern(inst, key)
  inst.kid = kid
  inst.row[0] = C.weir_kstate_row(inst.kstate, kid)
  local ctx = inst.kctx
  ctx.ts, ctx.out_ts, ctx.key, ctx.domain = ts, ts, key, nil
  cur_st, cur_ts = st, ts
  CALL(v, ctx, out)
end]],
  -- a rolling aggregate (weir.keyed): per key the reduce of every record so far, emitted. The
  -- row's pointer stays in inst.row[0], not in a local across the reduce call: a pointer in a
  -- Lua slot where a trace ends (a reduce function with a loop has a trace of its own) is
  -- boxed there, an allocation per record (see weir.keyed_state)
  rolling = [=[
local f, objs, insts, intern, C, emit, NUMBER, LUA, full = ...
local type = type
return function(st, v, ts, key)
  local inst = insts[st]
  local row = inst.row
  row[0] = C.weir_kstate_row_put(inst.kstate, intern(inst, key))
  if row[0] == nil then full() end
  local kind = row[0][2]
  local out = v
  if kind ~= 0 then
    out = CALL(kind == NUMBER and row[0][0] or inst.vals[row[0][3]], v)
    if out == nil then error("the reduce function returned nil", 0) end
  end
  if type(out) == "number" then
    if kind == LUA then inst.vals[row[0][3]] = nil end
    row[0][0], row[0][2] = out, NUMBER
  else
    inst.vals[row[0][3]] = out
    row[0][2] = LUA
  end
  return emit(st, out, ts)
end]=],
  sink_fn = [[
local f, objs, ctxs, out_n, NONE = ...
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  local ctx = ctxs[st]
  -- ts or key nil: NONE (a field that keeps its slot; see weir.run)
  if ts == nil then ctx.ts = NONE else ctx.ts = ts end
  if key == nil then ctx.key = NONE else ctx.key = key end
  CALL(v, ctx)
end]],
  -- a sink function that takes no context (fewer parameters than the context's place): no
  -- context to keep up to date per record. st and v are returned so that they stay live after
  -- the call: the error handler reads them from this frame, and a compiled trace leaves the
  -- slots of dead locals stale when it exits (another record, or no subtask at all).
  sink_fn_noctx = [[
local f, objs, out_n = ...
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  CALL(v)
  return st, v
end]],
  print = [[
local C, fmt, prefixes, fd, out_n, failed, all = ...
local type = type
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  if all or type(v) ~= "string" then v = fmt(v) end
  local p = prefixes[st]
  if #p > 0 then C.weir_out_write(fd, p, #p) end
  C.weir_out_write(fd, v, #v)
  -- an error is sticky: the last write returns any of the three
  if C.weir_out_write(fd, "\n", 1) ~= 0 then failed() end
end]],
  write_text = [[
local files, fmt, out_n, failed, all = ...
local type = type
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  if all or type(v) ~= "string" then v = fmt(v) end
  local ok, err = files[st]:write(v, "\n")
  if not ok then failed(st, err) end
end]],
  collect = [[
local values, out_n = ...
return function(st, v, ts, key)
  out_n[1] = out_n[1] + 1
  values[#values + 1] = v
end]],
  -- round robin without a branch: nexts[c] is (c + 1) % n. The branch that wrapped the counter
  -- went the other way every n-th record, a side exit per wrap (per second record at n = 2)
  -- when the trace was not recorded at the right phase
  rebalance = [[
local dpush, nexts, counters = ...
return function(st, v, ts, key)
  local c = counters[st]
  c = nexts[c]
  counters[st] = c
  dpush(c, v, ts)
end]],
  -- A number key's subtask comes from a direct-mapped memo (memo_k[slot] == k: memo_s[slot];
  -- slot = the key's int32 rounding masked; it starts with the keys 0..mask): a key found
  -- there costs a few loads and a compare instead of the C call (Flink's murmur hash of the
  -- key group). A miss asks C and overwrites the slot.
  hash = [[
local dpush, keyf, maxp, C, to_subtask, slow_group, memo_k, memo_s, mask = ...
local type = type
local bit = require("bit")
local band, tobit = bit.band, bit.tobit
return function(st, v, ts)
  local k = keyf(v)
  local tk, s = type(k), 0
  if tk == "number" then
    local slot = band(tobit(k), mask)
    if memo_k[slot] == k then
      s = memo_s[slot]
    else
      s = to_subtask[C.weir_keygroup_of_number(k, maxp)]
      memo_k[slot] = k
      memo_s[slot] = s
    end
  elseif tk == "string" then
    s = to_subtask[C.weir_keygroup_of_string(k, #k, maxp)]
  else
    s = to_subtask[slow_group(k)]
  end
  dpush(s, v, ts, k)
end]],
  -- a hash exchange into one subtask: every key group goes there, so only check the key
  hash1 = [[
local dpush, keyf, slow_group = ...
local type = type
return function(st, v, ts)
  local k = keyf(v)
  local tk = type(k)
  if tk ~= "string" and tk ~= "number" then slow_group(k) end
  dpush(0, v, ts, k)
end]],
  -- one line per call (a replay, a socket): no loop, which LuaJIT would try to trace and leave
  lines = [[
local ffi_string, emit, progress = ...
return function(events, i, j)
  if j == i + 1 then
    progress[1] = i
    local e = events[i]
    emit(0, ffi_string(e.ptr, e.len), nil)
    return
  end
  for k = i, j - 1 do
    progress[1] = k
    local e = events[k]
    emit(0, ffi_string(e.ptr, e.len), nil)
  end
end]],
  elements = [[
local values, emit, progress = ...
return function(first, last)
  local p = progress -- a local: in the loop an upvalue's load is redone per record
  for i = first, last do
    p[2] = i
    emit(0, values[i + 1], nil)
  end
end]],
  -- the record index is not stored per record: a failure's handler reads the loop's i from
  -- this frame (weir.failure, driver_index), so the name i is part of the contract
  generate = [[
local f, objs, emit, progress, fail_nil, is_nil = ...
return function(first, last)
  for i = first, last do
    local v = CALL(i)
    if is_nil(v) then fail_nil() end
    emit(0, v, nil)
  end
end]],
}

-- Typed sources: records filled in C arrive as one EV_RECORDS event per run; each is copied
-- into a fresh cdata (ct(buf[i])), so a record a user function keeps is never overwritten by
-- the next batch. Lines of a typed text source that C did not parse (socket, replay, or a
-- line C flagged malformed) are parsed here, by the same C function, straight into a record.
-- new is ffi.new: a record type's __new (string fields: it checks what a user passes) has nothing
-- to check in a copy C filled.
-- As generate, the record index is the loop's i, read by a failure's handler (no store per
-- record).
TEMPLATES.records = [[
local cast, ptr_t, ct, emit, progress, new = ...
return function(ptr, first, last)
  local buf = cast(ptr_t, ptr)
  for i = first, last do
    emit(0, new(ct, buf[i]), nil)
  end
end]]
TEMPLATES.record_lines = [[
local C, ct, layout, emit, progress, malformed, new = ...
local function one(events, k)
  progress[1] = k
  local e = events[k]
  local r = new(ct)
  local rc = C.weir_fields_parse(layout, e.ptr, e.len, r)
  if rc == 0 then emit(0, r, nil) else malformed(e, rc) end
end
return function(events, i, j)
  if j == i + 1 then
    one(events, i) -- one line per call: no loop (as lines)
    return
  end
  for k = i, j - 1 do
    progress[1] = k
    local e = events[k]
    local r = new(ct)
    local rc = C.weir_fields_parse(layout, e.ptr, e.len, r)
    if rc == 0 then emit(0, r, nil) else malformed(e, rc) end
  end
end]]
-- Lines of a JSON or CSV source into Lua tables (weir.json, weir.csv): decode gives true and
-- the value, false for a line that is no record (a CSV header), or nil and why.
TEMPLATES.decoded_lines = [[
local decode, emit, progress, malformed = ...
return function(events, i, j)
  for k = i, j - 1 do
    progress[1] = k
    local e = events[k]
    local ok, v = decode(e.ptr, e.len)
    if ok then emit(0, v, nil) elseif ok == nil then malformed(e, v) end
  end
end]]

-- Templates that run user code or write output record the running operator for the second
-- signal's message (weir_op_slot): one store per operator call. Exchanges and fan-outs do
-- not: they run no user code and call the next operator at once.
local NAMES_OPERATOR = { map = true, filter = true, flat_map = true, process = true,
  keyed_process = true, rolling = true,
  sink_fn = true, sink_fn_noctx = true, print = true, write_text = true, collect = true,
  generate = true }

local function fanout_source(n)
  local names = {}
  for i = 1, n do
    names[i] = "e" .. i
  end
  local body = {}
  for i = 1, n - 1 do
    body[i] = ("  %s(st, v, ts, key)"):format(names[i])
  end
  body[n] = ("  %s(st, v, ts, key)"):format(names[n])
  return ("local %s = ...\nreturn function(st, v, ts, key)\n%s\nend"):format(
    table.concat(names, ", "), table.concat(body, "\n"))
end

-- The assign_timestamps_and_watermarks operator (weir.timeflow instantiates it).
TEMPLATES.timestamps = [[
local assign, gens, emitters, emit, bad_ts, MAX = ...
local type, abs, MIN = type, math.abs, -math.huge
-- every subtask's generator is of the one strategy (one metatable, restored in place): its
-- on_event is found once here, not per record through the metatable (a hash miss on the
-- generator, then __index: ~45 machine instructions per record)
local _, g0 = next(gens)
local on_event = g0.on_event
-- each subtask's generator and emitter by st + 0.5 (they are set before this and restored in
-- place): hash-part keys, whose loads no array store of a later operator on the trace (window
-- state by id) may alias, so the JIT keeps them out of the loop; gens[st] was loaded again
local gen_of, em_of = {}, {}
local n_gens = 0
for st, g in pairs(gens) do
  gen_of[st + 0.5], em_of[st + 0.5] = g, emitters[st]
  n_gens = n_gens + 1
end
-- one subtask: its generator and emitter are upvalues, not two hash lookups (one folds to a
-- constant; the pre-loop part a window's side trace re-enters loses ~20 instructions)
local one = n_gens == 1
local g1, em1 = g0, emitters[(next(gens))]
return function(st, v, ts, key)
  local t = ts
  if assign then
    t = assign(v, ts)
    -- NaN and +-inf fail the range test, fractions `% 1`; not a tail call: the error handler
    -- finds this frame, so it names the record and the operator (and on_error routes it)
    if type(t) ~= "number" or not (abs(t) <= MAX) or t % 1 ~= 0 then bad_ts(t) end
  end
  -- looked up before the emit: a side trace leaving the operators downstream (a tumbling
  -- window's new window, 1 element in 5 in windows_typed) then inherits them
  local g, em
  if one then
    g, em = g1, em1
  else
    g, em = gen_of[st + 0.5], em_of[st + 0.5]
  end
  emit(st, v, t)
  on_event(g, v, t or MIN, em)
end]]

-- The entry of a window or timestamps operator, whose code is not a template: records the
-- running operator, then calls its push. One prototype per operator, as every template: one
-- shared closure made the same function appear twice on a trace's stack (a timestamps and a
-- window operator), which LuaJIT takes for recursion ("down-recursion" aborts).
TEMPLATES.entry = [[
local push, slot, id = ...
return function(st, v, ts, key)
  slot[0] = id
  push(st, v, ts, key)
end]]

---Adds an operator module's templates (weir.interval): name -> source, as TEMPLATES above;
---they record the running operator (NAMES_OPERATOR).
function M.add_templates(t)
  for name, src in pairs(t) do
    assert(TEMPLATES[name] == nil or TEMPLATES[name] == src, name)
    TEMPLATES[name], NAMES_OPERATOR[name] = src, true
  end
end

---Builds one generated function from a template (compiled once per operator and template):
---a method of the job (Job:generate). what is a template's name, or "name/variant" for the
---template in a prototype of its own (one per variant: weir.connect's second side).
function M.generate(self, node, what, rich, ...)
  local cache_key = node.id .. ":" .. what .. (rich and ":rich" or "")
  -- "map/2": the map template in a prototype of its own (a two-input operator's second side)
  local variant = what
  what = what:match("^[^/]*")
  local factory = self.factories[cache_key]
  if not factory then
    local src = TEMPLATES[what]
    if what:sub(1, 7) == "fanout:" then
      src = fanout_source(tonumber(what:sub(8)))
    end
    src = src:gsub("CALL%(", rich and "f(objs[st], " or "f(")
    if what == "generate" and rich then
      src = src:gsub("objs%[st%]", "objs[0]")
    end
    if node.out_derived then -- a sink counted from its source's batches (weir.exchange)
      src = src:gsub("\n  out_n%[1%] = out_n%[1%] %+ 1\n", "\n", 1)
    end
    if NAMES_OPERATOR[what] then
      src = src:gsub("^local ", "local OP_, OPID_, ", 1)
      src = src:gsub("\nreturn function%(([^)]*)%)\n",
        "\nreturn function(%1)\n  OP_[0] = OPID_\n", 1)
    end
    factory = assert(load(src, ("=weir op %d %s"):format(node.id, variant)))
    -- the chunk is set-up code (its loops, as the timestamps operator's over the subtasks, run
    -- once per operator: a trace started there now and then and left the loop); the function
    -- it returns, a child prototype, compiles
    jit.off(factory)
    self.factories[cache_key] = factory
  end
  if NAMES_OPERATOR[what] then
    return factory(self.op_slot, node.id, ...)
  end
  return factory(...)
end

-- Sweeps: the per-tick and per-batch visits of every assigner or window subtask (weir.timeflow).
-- As loops they run one trip per subtask, a few per call, which LuaJIT can neither compile as a
-- loop nor leave without aborting the trace ("leaving loop in root trace", "inner loop in root
-- trace"), once per batch; generated per job as straight-line code they are one trace.
M.SWEEP_MAX = 32 -- more entries than this keep a loop

---A straight-line sweep, compiled per job: `function(PARAMS) PROLOGUE; CALL for every entry;
---EPILOGUE end`, where E in CALL is the entry (entries[i]) and names lists the upvalues taken
---from env (a table name -> value).
function M.sweep(what, entries, params, call, env, names, prologue, epilogue)
  local src = { "local entries, env = ..." }
  for _, name in ipairs(names) do
    src[#src + 1] = ("local %s = env.%s"):format(name, name)
  end
  for i = 1, #entries do
    src[#src + 1] = ("local e%d = entries[%d]"):format(i, i)
  end
  src[#src + 1] = ("return function(%s)"):format(params)
  src[#src + 1] = prologue or ""
  for i = 1, #entries do
    src[#src + 1] = "  " .. call:gsub("E", "e" .. i)
  end
  src[#src + 1] = epilogue or ""
  src[#src + 1] = "end"
  local factory = assert(load(table.concat(src, "\n"), "=weir sweep " .. what))
  return factory(entries, env)
end

---The window starts of an element for a sliding assigner whose size is k slides (k <= SWEEP_MAX):
---function(starts, s, slide) that fills starts[1..k] with s, s - slide, ... and returns k,
---straight-line (a loop of k trips per element made every trace through it abort: "inner loop
---in root trace").
function M.window_starts(k)
  local src = { "return function(starts, s, slide)" }
  for i = 1, k do
    src[#src + 1] = ("  starts[%d] = s - %d * slide"):format(i, i - 1)
  end
  src[#src + 1] = ("  return %d\nend"):format(k)
  return assert(load(table.concat(src, "\n"), "=weir window starts " .. k))()
end

---The failure a map or generate function raises for a nil result (not per record: a factory).
function M.nil_result(what)
  return function()
    error(what .. " returned nil (records cannot be nil; use filter or flat_map to drop)", 0)
  end
end


-- Set-up code: the functions above run once per operator or job, and are never traced: LuaJIT's
-- hot counters are shared by every loop (a hash of the bytecode's address), so a one-off loop
-- can look hot and start a trace that aborts when it leaves it ("leaving loop in root trace").
-- jit.off(f) only marks f's own bytecode (jit.off(f, true) also the closures made in it): what it
-- calls, and the code it generates, compile.
-- This module is all set-up code: jit.off(true, true) at its top. Elsewhere, set-up functions
-- are marked one by one.

-- Tail calls: a run-time function does not end in a tail call of a built-in or a C function
-- (`return setmetatable(...)`, `return C.weir_...(...)`, `return tostring(v)`), but in
-- `local r = f(...)` and `return r`. A function called from code that is not compiled (an
-- interpreted loop, a set-up function) gets hot and starts a root trace of its own; with the
-- tail call, the built-in returns straight to the caller's frame, which is outside the trace,
-- and LuaJIT aborts the trace ("leaving loop in root trace" or, for a jit.off caller, "JIT
-- compilation disabled for function": lj_record.c, lj_record_ret) every time, until it
-- blacklists the function. A return from the function's own frame ends the trace instead
-- (linked to the interpreter's return). Tail calls of Lua functions are fine: their return is
-- the function's own.


return M
