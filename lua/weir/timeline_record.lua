-- weir.timeline_record: the recorder behind `weir timeline` and the REPL's `:draw --svg`, and
-- the data it collects: the snapshot (plain data, what the picture draws) and its --data form
-- (a Lua table, what weir.sweep reads back).
--
-- The recorder reads the window layer only through its face: the job's trace (job.trace, see
-- weir.windowing: elements per key, late records, fires) and windowing.windows for what is
-- still open. What the trace does not say it learns by wrapping, after the job has started
-- and before a record flows, four functions that already exist: each window node's
-- on_watermark and on_processing_time (the watermark per processing time, and whether a fire
-- came from the watermark, a processing-time timer or an element), the job's dispatch (one batch
-- is one clock reading on the virtual clock: what the batch's records did is stamped with it),
-- and each timestamps operator emitter's send_status (idle inputs). No hot path changes: only
-- a traced job (weir.timeline, the REPL) pays for it, per batch and per watermark.
local format = require("weir.format")
local windowing = require("weir.windowing")

local M = {}

local INF = math.huge

---A new, empty trace (the table weir.windowing describes).
function M.new_trace()
  return { late = {}, elements = {}, keys = {}, fired = {} }
end

-- Recording ---------------------------------------------------------------------------------

---Starts recording a started job (job.trace set before job:start()). Returns the recorder.
function M.attach(job)
  local trace = job.trace
  local rec = { job = job, trace = trace, wm = {}, idle = {}, stamped = 0, at = {}, done = {},
                node_wm = {}, last_wm = {}, records_seen = -1 }

  -- The window (key, start, stop) already fired on time: a later fire of it is late.
  local function id_of(f)
    return tostring(f.key) .. "\0" .. f.start .. "\0" .. f.stop
  end
  local function classify(f, cause, w)
    local id = id_of(f)
    if f.what == "purged" then
      return "purged"
    elseif rec.done[id] then
      return "late"
    elseif w >= f.stop - 1 then
      if cause == "element" then
        rec.done[id] = true
        return "late" -- a late element within the lateness made (and fired) the window
      end
      rec.done[id] = true
      return "on time"
    end
    return "early"
  end

  -- what the records of this batch (or this clock reading) did: their elements, late records
  -- and fires get its time
  local function stamp(cause, w, node)
    local now = job:now()
    rec.last_now = now -- what the picture's end is once the job is closed
    local fired = trace.fired
    for i = rec.stamped + 1, #fired do
      local f = fired[i]
      local ww = w
      if ww == nil then
        -- an element's fire: the watermark its operator had (min over its subtasks; without
        -- the operator, over every window operator's)
        ww = INF
        for n, per in pairs(rec.node_wm) do
          if node == nil or n == node then
            for _, v in pairs(per) do
              ww = math.min(ww, v)
            end
          end
        end
        if ww == INF and next(rec.node_wm) == nil then
          ww = -INF
        end
      end
      f.at, f.kind = now, classify(f, cause, ww)
    end
    rec.stamped = #fired
    if job.records_in == rec.records_seen then
      return -- no record came since: no element to stamp (the scan is per key)
    end
    rec.records_seen = job.records_in
    for _, key in ipairs(trace.keys) do
      local per, at = trace.elements[key], rec.at[key]
      if not at then
        at = {}
        rec.at[key] = at
      end
      for i = #at + 1, #per do
        at[i] = now
      end
    end
    for _, l in ipairs(trace.late) do
      if l.at == nil then
        l.at = now
      end
    end
  end
  rec.stamp = stamp

  local function min_wm(node)
    local m = INF
    for _, v in pairs(rec.node_wm[node]) do
      m = math.min(m, v)
    end
    return m
  end

  for _, node in ipairs(job.timer_nodes) do
    if windowing.runs(node) then
      rec.node_wm[node] = {}
      for _, inst in ipairs(node.instances) do
        rec.node_wm[node][inst.index] = -INF
      end
      local on_wm, on_pt = node.on_watermark, node.on_processing_time
      rec.last_wm[node] = -INF
      node.on_watermark = function(inst, w)
        stamp("element", nil, node)
        rec.node_wm[node][inst.index] = w
        on_wm(inst, w)
        stamp("watermark", w, node)
        local m = min_wm(node)
        if m ~= rec.last_wm[node] then
          rec.last_wm[node] = m
          rec.wm[#rec.wm + 1] = { at = job:now(), w = m, operator = node.label }
        end
      end
      node.on_processing_time = function(inst, t, as_if_due)
        stamp("element", nil, node)
        on_pt(inst, t, as_if_due)
        stamp("timer", t, node)
      end
    end
  end
  local dispatch = job.dispatch -- every batch goes through it (Job:pump, and the REPL's handle)
  job.dispatch = function(self, n, k, sub)
    dispatch(self, n, k, sub)
    stamp("element")
  end
  for _, node in ipairs(job.assigners) do
    for st = 0, node.parallelism - 1 do
      local em = node.emitters[st]
      local send = em.send_status
      em.send_status = function(idle)
        rec.idle[#rec.idle + 1] = { at = job:now(), idle = idle, operator = node.label,
                                    subtask = st, parallelism = node.parallelism }
        send(idle)
      end
    end
  end
  return rec
end

-- The recorder's own state: what save copies and load puts back (entries of its lists are
-- never changed once added; its tables by key, window or node are).
local LISTS, MAPS = { "wm", "idle" }, { "at", "done", "node_wm", "last_wm" }

local function copy(t)
  local c = {}
  for k, v in pairs(t) do
    c[k] = v
  end
  return c
end

---A copy of what rec has recorded so far (the REPL's :undo keeps one with each step).
function M.save(rec)
  local saved = { stamped = rec.stamped, records_seen = rec.records_seen,
                  last_now = rec.last_now }
  for _, name in ipairs(LISTS) do
    saved[name] = copy(rec[name])
  end
  for _, name in ipairs(MAPS) do
    saved[name] = {}
    for k, v in pairs(rec[name]) do
      saved[name][k] = type(v) == "table" and copy(v) or v
    end
  end
  return saved
end

---Puts what save copied into rec, a recorder attached to the job restored from that moment
---(its trace the copy of the trace then), so that it records on as the first one would have.
function M.load(rec, saved)
  local fresh = M.save(saved) -- saved stays as it was, for a later :undo to the same step
  for k, v in pairs(fresh) do
    rec[k] = v
  end
end

---What the recorder saw, as plain data (what --data writes and the picture draws): times in
---ms, keys as their printed text. Call it before the job is closed (it reads open windows).
function M.snapshot(rec, meta)
  local job, trace = rec.job, rec.trace
  local live = job and job.rt ~= nil
  if live then
    rec.stamp("element")
  end
  local now = live and job:now() or rec.last_now or 0
  local d = { job = meta and meta.job or (job and job.plan.job_name) or "weir job",
              script = meta and meta.script, params = meta and meta.params or {},
              records_in = job and job.records_in or 0, late_dropped = 0, end_at = now,
              stopped = job and job.stopped or false,
              keys = {}, elements = {}, late = {}, fires = {}, open = {}, watermarks = {},
              idle = {}, operators = {} }
  local kid = {}
  local function key_index(key)
    local text = format.value(key)
    local i = kid[text]
    if not i then
      i = #d.keys + 1
      d.keys[i] = text
      kid[text] = i
    end
    return i
  end
  for _, key in ipairs(trace.keys) do
    local i = key_index(key)
    local at = rec.at[key] or {}
    for j, ts in ipairs(trace.elements[key]) do
      d.elements[#d.elements + 1] = { key = i, ts = ts, at = at[j] or now }
    end
  end
  for _, l in ipairs(trace.late) do
    d.late[#d.late + 1] = { key = key_index(l.key), ts = l.ts, at = l.at or now,
                            watermark = l.watermark, operator = l.operator }
  end
  for _, f in ipairs(trace.fired) do
    d.fires[#d.fires + 1] = { key = key_index(f.key), start = f.start, stop = f.stop,
                              kind = f.kind or "on time", at = f.at or now }
  end
  if job then
    for _, node in ipairs(job.timer_nodes) do
      if windowing.runs(node) then
        d.late_dropped = d.late_dropped + (node.late_dropped or 0)
        d.operators[#d.operators + 1] = { label = node.label, parallelism = node.parallelism,
                                          late_dropped = node.late_dropped or 0 }
        if node.assigner and node.assigner.is_event_time == false then
          d.processing_windows = true
        end
        if live then
          for _, inst in ipairs(node.instances) do
            for _, e in ipairs(windowing.windows(node, inst)) do
              d.open[#d.open + 1] = { key = key_index(e.key), start = e.window.start,
                                      stop = e.window.stop }
            end
          end
        end
      end
    end
  end
  for _, w in ipairs(rec.wm) do
    d.watermarks[#d.watermarks + 1] = { at = w.at, w = w.w, operator = w.operator }
  end
  local open = {}
  for _, e in ipairs(rec.idle) do
    local id = e.operator .. "\0" .. e.subtask
    if e.idle and not open[id] then
      open[id] = { operator = e.operator, subtask = e.subtask, parallelism = e.parallelism,
                   from = e.at }
      d.idle[#d.idle + 1] = open[id]
    elseif not e.idle and open[id] then
      open[id].to = e.at
      open[id] = nil
    end
  end
  for _, p in ipairs(d.idle) do
    if not p.to then
      p.to, p.open = now, true
    end
  end
  return d
end

-- Writing data ------------------------------------------------------------------------------

local function lua_value(v)
  local t = type(v)
  if t == "number" then
    if v == INF then
      return "1/0"
    elseif v == -INF then
      return "-1/0"
    elseif v ~= v then
      return "0/0"
    end
    return ("%.17g"):format(v)
  elseif t == "string" then
    return ("%q"):format(v)
  elseif t == "boolean" then
    return tostring(v)
  elseif t == "table" then
    local parts = {}
    for i, x in ipairs(v) do
      parts[i] = lua_value(x)
    end
    local names = {}
    for k in pairs(v) do
      if type(k) == "string" then
        names[#names + 1] = k
      end
    end
    table.sort(names)
    for _, k in ipairs(names) do
      parts[#parts + 1] = k .. " = " .. lua_value(v[k])
    end
    return "{ " .. table.concat(parts, ", ") .. " }"
  end
  return "nil"
end

---The snapshot as Lua source: `return { ... }` (loaded by weir.sweep with no environment).
function M.data_text(d)
  local lines = { "-- weir timeline --data", "return {" }
  local names = {}
  for k in pairs(d) do
    names[#names + 1] = k
  end
  table.sort(names)
  for _, k in ipairs(names) do
    lines[#lines + 1] = ("  %s = %s,"):format(k, lua_value(d[k]))
  end
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n") .. "\n"
end

---Reads a --data file; nil and the problem when it is not one.
function M.read_data(path)
  local chunk, err = loadfile(path)
  if not chunk then
    return nil, err
  end
  setfenv(chunk, {})
  local ok, d = pcall(chunk)
  if not ok or type(d) ~= "table" then
    return nil, path .. ": not a weir timeline data file"
  end
  return d
end

return M
