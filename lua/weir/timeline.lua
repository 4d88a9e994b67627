-- weir.timeline: what happened in a job, recorded and drawn as an SVG picture (`weir timeline`,
-- the REPL's `:draw --svg FILE`), or written as a Lua table (`--data`, what weir.sweep reads).
--
-- The recorder reads the window layer only through its face: the job's trace (job.trace, see
-- weir.windowing: elements per key, late records, fires) and windowing.windows for what is
-- still open. What the trace does not say it learns by wrapping, after the job has started
-- and before a record flows, four functions that already exist: each window node's
-- on_watermark and on_processing_time (the watermark per processing time, and whether a fire
-- came from the watermark, a processing-time timer or an element), the job's dispatch (one batch
-- is one clock reading on the virtual clock: what the batch's records did is stamped with it),
-- and each timestamps operator emitter's send_status (idle inputs). No hot path changes: only
-- a traced job (this module, the REPL) pays for it, per batch and per watermark.
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
                node_wm = {}, records_seen = -1 }

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
      local last = -INF
      node.on_watermark = function(inst, w)
        stamp("element", nil, node)
        rec.node_wm[node][inst.index] = w
        on_wm(inst, w)
        stamp("watermark", w, node)
        local m = min_wm(node)
        if m ~= last then
          last = m
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

-- Drawing -----------------------------------------------------------------------------------

---A duration in ms as short text: 0, 250ms, 5s, 1.5s, 2m, 1h30m.
function M.ms_text(ms)
  if ms == INF then
    return "+inf"
  elseif ms == -INF then
    return "-inf"
  end
  local sign = ms < 0 and "-" or ""
  ms = math.abs(ms)
  if ms == 0 then
    return "0"
  elseif ms < 1000 then
    return sign .. ("%gms"):format(ms)
  elseif ms % 3600000 == 0 then
    return sign .. (ms / 3600000) .. "h"
  elseif ms >= 3600000 and ms % 60000 == 0 then
    return sign .. math.floor(ms / 3600000) .. "h" .. (ms % 3600000) / 60000 .. "m"
  elseif ms % 60000 == 0 then
    return sign .. (ms / 60000) .. "m"
  elseif ms < 60000 then
    return sign .. ("%gs"):format(tonumber(("%.3f"):format(ms / 1000)))
  end
  return sign .. math.floor(ms / 60000) .. "m" .. ("%gs"):format(
    tonumber(("%.3f"):format((ms % 60000) / 1000)))
end

local function esc(s)
  return (tostring(s):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
                                        ['"'] = "&quot;" }))
end

local function n1(x)
  local s = ("%.1f"):format(x)
  if s == "-0.0" then
    s = "0.0"
  end
  return (s:gsub("%.0$", ""))
end

-- Tick steps that read as times: 1-2-5 below a second, then 1, 2, 5, 10, 15, 30 s, 1, 2, 5,
-- 10, 15, 30 min, 1, 2, 3, 6, 12 h, days; beyond, 1-2-5 days again.
local STEPS = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000,
                60000, 120000, 300000, 600000, 900000, 1800000, 3600000, 7200000, 10800000,
                21600000, 43200000, 86400000 }

local function nice_step(span, n)
  local raw = span / n
  for _, s in ipairs(STEPS) do
    if s >= raw then
      return s
    end
  end
  local e = 86400000 * 10 ^ math.floor(math.log10(raw / 86400000))
  local f = raw / e
  return (f <= 1 and 1 or f <= 2 and 2 or f <= 5 and 5 or 10) * e
end

-- An axis over [lo, hi]: ticks, and an origin when the times are large (epoch ms), so that
-- labels stay short: "+5s" after the origin the caption names.
local function axis(lo, hi, n, first)
  local step = nice_step(hi - lo, n)
  local origin = 0
  if math.abs(first) >= 1e7 then
    origin = math.floor(first / step) * step
  end
  local ticks = {}
  local t = math.ceil(lo / step) * step
  while t <= hi + 1e-9 and #ticks < 40 do
    local rel = t - origin
    ticks[#ticks + 1] = { t = t, text = (origin ~= 0 and rel >= 0 and "+" or "") .. M.ms_text(rel) }
    t = t + step
  end
  return ticks, origin
end

local function origin_text(origin, what)
  if origin == 0 then
    return what
  end
  local text = ("%s: +0 = %s ms"):format(what, ("%.0f"):format(origin))
  if origin > 0 and origin < 1e14 then
    text = text .. os.date("! (%Y-%m-%d %H:%M:%S UTC)", math.floor(origin / 1000))
  end
  return text
end

local COLOUR = { ["on time"] = "#2e7d32", late = "#e65100", early = "#1565c0", purged = "#616161" }
local FILL = { ["on time"] = "#c8e6c9", late = "#ffe0b2", early = "#bbdefb", purged = "#e0e0e0" }
local WM_COLOUR = "#7b1fa2"
local RECORD_COLOUR = "#37474f"
local DROP_COLOUR = "#c62828"

-- A fire's mark: a circle (on time), a diamond (late), a triangle (early), a square (purged).
local function mark(out, kind, x, y, r)
  local c = COLOUR[kind] or COLOUR["on time"]
  if kind == "late" then
    out[#out + 1] = ('<path d="M%s %sl%s %sl%s %sl%s %sz" fill="%s"/>'):format(n1(x), n1(y - r),
      n1(r), n1(r), n1(-r), n1(r), n1(-r), n1(-r), c)
  elseif kind == "early" then
    out[#out + 1] = ('<path d="M%s %sl%s %sh%sz" fill="%s"/>'):format(n1(x), n1(y - r),
      n1(r), n1(2 * r), n1(-2 * r), c)
  elseif kind == "purged" then
    out[#out + 1] = ('<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>'):format(
      n1(x - r * 0.8), n1(y - r * 0.8), n1(r * 1.6), n1(r * 1.6), c)
  else
    out[#out + 1] = ('<circle cx="%s" cy="%s" r="%s" fill="%s"/>'):format(n1(x), n1(y), n1(r * 0.9),
      c)
  end
end

local function cross(out, x, y, r, c)
  out[#out + 1] = ('<path d="M%s %sl%s %sm0 %sl%s %s" stroke="%s" stroke-width="2"/>'):format(
    n1(x - r), n1(y - r), n1(2 * r), n1(2 * r), n1(-2 * r), n1(-2 * r), n1(2 * r), c)
end

local function text(out, x, y, s, attrs)
  out[#out + 1] = ('<text x="%s" y="%s"%s>%s</text>'):format(n1(x), n1(y),
    attrs and (" " .. attrs) or "", esc(s))
end

local MAX_KEYS = 40

-- An operator label without the script's folder: "window ... (job.lua:30)".
local function short(label)
  return (label:gsub("%(([^()]*/)([^/()]+:%d+)%)", "(%2)"))
end

---The SVG picture of a snapshot (deterministic: the same data gives the same bytes).
function M.svg(d)
  local W, L, R = 960, 120, 30
  local PW = W - L - R
  -- the windows per (key, window): their fires, whether still open
  local wins, order = {}, {}
  local function win(key, start, stop)
    local id = key .. "\0" .. start .. "\0" .. stop
    local w = wins[id]
    if not w then
      w = { key = key, start = start, stop = stop, fires = {}, open = false }
      wins[id] = w
      order[#order + 1] = w
    end
    return w
  end
  for _, f in ipairs(d.fires) do
    local w = win(f.key, f.start, f.stop)
    w.fires[#w.fires + 1] = f
  end
  for _, o in ipairs(d.open) do
    win(o.key, o.start, o.stop).open = true
  end
  -- the event-time range: records, late records, finite windows
  local lo, hi = INF, -INF
  local function cover(a, b)
    if a > -INF and a < INF then
      lo = math.min(lo, a)
      hi = math.max(hi, a)
    end
    if b and b > -INF and b < INF then
      lo = math.min(lo, b)
      hi = math.max(hi, b)
    end
  end
  for _, e in ipairs(d.elements) do
    cover(e.ts)
  end
  for _, e in ipairs(d.late) do
    cover(e.ts)
  end
  for _, w in ipairs(order) do
    cover(w.start, w.stop)
  end
  if lo == INF then
    lo, hi = 0, 1000
  end
  if hi <= lo then
    hi = lo + 1000
  end
  local first_t = lo
  local span = hi - lo
  lo, hi = lo - span * 0.02, hi + span * 0.02
  local function x(t)
    if t <= lo then
      return L
    elseif t >= hi then
      return L + PW
    end
    return L + (t - lo) / (hi - lo) * PW
  end
  -- the processing-time range
  local p0, p1 = INF, -INF
  local function pcover(t)
    if t and t > -INF and t < INF then
      p0, p1 = math.min(p0, t), math.max(p1, t)
    end
  end
  for _, e in ipairs(d.elements) do
    pcover(e.at)
  end
  for _, e in ipairs(d.late) do
    pcover(e.at)
  end
  for _, f in ipairs(d.fires) do
    pcover(f.at)
  end
  for _, w in ipairs(d.watermarks) do
    pcover(w.at)
  end
  for _, p in ipairs(d.idle) do
    pcover(p.from)
    pcover(p.to)
  end
  pcover(d.end_at)
  if p0 == INF then
    p0, p1 = 0, 1000
  end
  if p1 <= p0 then
    p1 = p0 + 1000
  end

  local out = {}
  local y
  local body = {}
  local function add(s)
    body[#body + 1] = s
  end
  -- title
  local late_fires, purged, fired_windows, early = 0, 0, 0, 0
  for _, w in ipairs(order) do
    local any = false
    for _, f in ipairs(w.fires) do
      if f.kind == "late" then
        late_fires = late_fires + 1
      elseif f.kind == "purged" then
        purged = purged + 1
      elseif f.kind == "early" then
        early = early + 1
      end
      any = any or f.kind ~= "purged"
    end
    if any then
      fired_windows = fired_windows + 1
    end
  end
  y = 24
  text(body, L - 110, y, ("%s%s"):format(d.job, d.script and (" (" .. d.script .. ")") or ""),
    'font-size="16" font-weight="bold"')
  y = y + 18
  local params = {}
  for _, p in ipairs(d.params or {}) do
    params[#params + 1] = p
  end
  text(body, L - 110, y, ("%d record(s) in, %d window(s) fired, %d late fire(s), %d early, %d "
    .. "purged, %d late record(s) dropped%s"):format(d.records_in, fired_windows, late_fires,
    early, purged, d.late_dropped, #params > 0 and ("; --param " .. table.concat(params, " "))
    or ""), 'font-size="12"')
  y = y + 28
  -- event-time axis
  local eticks, eorigin = axis(lo, hi, 8, first_t)
  text(body, L, y, "per key: records and windows (event time \226\134\146" .. (d.processing_windows
    and "; processing-time windows: their spans are processing time)" or ")"),
    'font-size="13" font-weight="bold"')
  text(body, L + PW, y, origin_text(eorigin, "event time"), 'font-size="11" text-anchor="end"')
  y = y + 8
  local grid_top = y
  local axis_y = y + 14
  for _, t in ipairs(eticks) do
    text(body, x(t.t), axis_y - 2, t.text, 'font-size="10" text-anchor="middle" fill="#555"')
  end
  y = axis_y + 6
  -- lanes
  local by_key = {}
  for _, w in ipairs(order) do
    by_key[w.key] = by_key[w.key] or {}
    table.insert(by_key[w.key], w)
  end
  local lanes = {}
  local shown = math.min(#d.keys, MAX_KEYS)
  for k = 1, shown do
    local list = by_key[k] or {}
    table.sort(list, function(a, b)
      if a.start ~= b.start then
        return a.start < b.start
      end
      return a.stop < b.stop
    end)
    -- rows of windows that do not overlap (sliding windows take several)
    local rows = {}
    for _, w in ipairs(list) do
      local placed = false
      for r, last in ipairs(rows) do
        if w.start >= last then
          w.row, rows[r], placed = r, w.stop, true
          break
        end
      end
      if not placed then
        rows[#rows + 1] = w.stop
        w.row = #rows
      end
    end
    lanes[k] = { top = y, windows = list, rows = #rows }
    y = y + 20 + #rows * 15 + 8
  end
  local lanes_bottom = y
  local lane_lines = {}
  for k = 1, shown do
    local lane = lanes[k]
    local ry = lane.top + 10
    if k % 2 == 0 then
      lane_lines[#lane_lines + 1] = ('<rect x="%d" y="%s" width="%d" height="%s" fill="#f7f7f7"/>')
        :format(0, n1(lane.top - 2), W, n1(20 + lane.rows * 15 + 8))
    end
    text(body, L - 10, ry + 4, d.keys[k], 'font-size="12" text-anchor="end"')
    for _, w in ipairs(lane.windows) do
      local wy = lane.top + 20 + (w.row - 1) * 15
      local x1, x2 = x(w.start), x(w.stop)
      local first = w.fires[1] and w.fires[1].kind
      if w.open and not first then
        add(('<rect x="%s" y="%s" width="%s" height="11" rx="2" fill="#ffffff" stroke="#888" '
          .. 'stroke-dasharray="3 2"/>'):format(n1(x1), n1(wy), n1(math.max(1, x2 - x1 - 1))))
      else
        add(('<rect x="%s" y="%s" width="%s" height="11" rx="2" fill="%s" stroke="%s"/>'):format(
          n1(x1), n1(wy), n1(math.max(1, x2 - x1 - 1)), FILL[first] or FILL["on time"],
          COLOUR[first] or COLOUR["on time"]))
      end
      -- its fires, right to left from its end
      local room = math.max(1, math.floor((x2 - x1 - 4) / 10))
      local n = #w.fires
      local drawn = n <= room and n or room - 1
      for i = 1, drawn do
        mark(body, w.fires[i].kind, x2 - 7 - (drawn - i) * 10, wy + 5.5, 4.5)
      end
      if drawn < n then
        text(body, x1 + 3, wy + 9, ("%d fires"):format(n), 'font-size="9"')
      end
    end
  end
  -- a record that came when the watermark had passed it (kept: within the allowed lateness)
  local ops_wm = {}
  for _, w in ipairs(d.watermarks) do
    ops_wm[w.operator] = ops_wm[w.operator] or {}
    table.insert(ops_wm[w.operator], w)
  end
  local function wm_at(t)
    local m, any = INF, false
    for _, list in pairs(ops_wm) do
      local v = -INF
      for _, w in ipairs(list) do
        if w.at > t then
          break
        end
        v = w.w
      end
      m, any = math.min(m, v), true
    end
    return any and m or -INF
  end
  local late_kept = {}
  for i, e in ipairs(d.elements) do
    late_kept[i] = e.ts <= wm_at(e.at)
  end
  local function ring(cx, cy, r)
    add(('<circle cx="%s" cy="%s" r="%s" fill="none" stroke="%s" stroke-width="1.5"/>'):format(
      n1(cx), n1(cy), n1(r), COLOUR.late))
  end
  for i, e in ipairs(d.elements) do
    if e.key <= shown then
      add(('<circle cx="%s" cy="%s" r="3.5" fill="%s"/>'):format(n1(x(e.ts)),
        n1(lanes[e.key].top + 10), RECORD_COLOUR))
      if late_kept[i] then
        ring(x(e.ts), lanes[e.key].top + 10, 6)
      end
    end
  end
  for _, e in ipairs(d.late) do
    if e.key <= shown then
      cross(body, x(e.ts), lanes[e.key].top + 10, 4, DROP_COLOUR)
    end
  end
  if #d.keys > shown then
    text(body, L, y + 4, ("(%d more key(s) not drawn)"):format(#d.keys - shown), 'font-size="11"')
    y = y + 16
  end
  if #d.keys == 0 then
    text(body, L, y + 12, "(no record reached a window)", 'font-size="12"')
    y = y + 24
  end
  -- the watermark over processing time
  y = y + 24
  text(body, L, y, "watermark over processing time (processing time \226\134\147), with the "
    .. "records as they arrived and the fires", 'font-size="13" font-weight="bold"')
  local pticks, porigin = axis(p0, p1, 6, p0)
  text(body, L + PW, y + 14, origin_text(porigin, "processing time"),
    'font-size="11" text-anchor="end"')
  y = y + 24
  local PT, PH = y, 260
  local function py(t)
    if t <= p0 then
      return PT
    elseif t >= p1 then
      return PT + PH
    end
    return PT + (t - p0) / (p1 - p0) * PH
  end
  add(('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#bbb"/>'):format(L, PT, PW,
    PH))
  for i, p in ipairs(d.idle) do
    local y1, y2 = py(p.from), py(p.to)
    add(('<rect x="%d" y="%s" width="%d" height="%s" fill="#fff3c4" fill-opacity="0.6" '
      .. 'stroke="#e0b000" stroke-dasharray="4 2"/>'):format(L, n1(y1), PW,
      n1(math.max(2, y2 - y1))))
    local ty = y1 + 11 + ((i - 1) % 3) * 11
    if ty > PT + PH - 16 then
      ty = y1 - 3 - ((i - 1) % 3) * 11 -- above a band that starts near the bottom
    end
    text(body, L + PW - 4, ty, ("idle: %s %d/%d from %s%s"):format(
      short(p.operator), p.subtask + 1, p.parallelism, M.ms_text(p.from - porigin),
      p.open and " (still idle)" or (" to " .. M.ms_text(p.to - porigin))),
      'font-size="10" text-anchor="end" fill="#8a6d00"')
  end
  for _, t in ipairs(pticks) do
    add(('<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#eee"/>'):format(L, n1(py(t.t)), L + PW,
      n1(py(t.t))))
    text(body, L - 6, py(t.t) + 3, t.text, 'font-size="10" text-anchor="end" fill="#555"')
  end
  for i, e in ipairs(d.elements) do
    add(('<circle cx="%s" cy="%s" r="2.5" fill="%s" fill-opacity="0.6"/>'):format(n1(x(e.ts)),
      n1(py(e.at)), RECORD_COLOUR))
    if late_kept[i] then
      ring(x(e.ts), py(e.at), 5)
    end
  end
  for _, e in ipairs(d.late) do
    cross(body, x(e.ts), py(e.at), 3.5, DROP_COLOUR)
  end
  -- one step line per window operator
  local per_op, ops = {}, {}
  for _, w in ipairs(d.watermarks) do
    if not per_op[w.operator] then
      per_op[w.operator] = {}
      ops[#ops + 1] = w.operator
    end
    table.insert(per_op[w.operator], w)
  end
  for i, op in ipairs(ops) do
    local path, px, label_at = {}, nil, nil
    for _, w in ipairs(per_op[op]) do
      if w.w > -INF then
        local wx, wy = x(w.w), py(w.at)
        if not px then
          path[#path + 1] = ("M%s %s"):format(n1(wx), n1(wy))
        else
          path[#path + 1] = ("V%sH%s"):format(n1(wy), n1(wx))
        end
        px = wx
        if w.w == INF then
          label_at = wy
        end
      end
    end
    if px then
      if not label_at then
        path[#path + 1] = ("V%s"):format(n1(py(d.end_at)))
      end
      add(('<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>'):format(
        table.concat(path), WM_COLOUR, i > 1 and (' stroke-dasharray="%d 3"'):format(2 + 3 * i)
        or ""))
      if label_at then
        text(body, L + PW - 4, label_at - 4, ("watermark%s: +inf (end of input)"):format(
          #ops > 1 and (" " .. short(op)) or ""),
          'font-size="10" text-anchor="end" fill="' .. WM_COLOUR .. '"')
      elseif #ops > 1 then
        text(body, px + 4, py(d.end_at) - 4, "watermark " .. short(op),
          'font-size="10" fill="' .. WM_COLOUR .. '"')
      end
    end
  end
  for _, f in ipairs(d.fires) do
    mark(body, f.kind, x(f.stop), py(f.at), 5)
  end
  for _, t in ipairs(eticks) do
    add(('<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#eee"/>'):format(n1(x(t.t)), grid_top,
      n1(x(t.t)), PT + PH))
  end
  y = PT + PH + 36
  -- legend
  local items = {
    { "record", function(o, lx, ly) o[#o + 1] = ('<circle cx="%s" cy="%s" r="3.5" fill="%s"/>')
      :format(n1(lx), n1(ly), RECORD_COLOUR) end },
    { "late record, kept (lateness)", function(o, lx, ly)
      o[#o + 1] = ('<circle cx="%s" cy="%s" r="3.5" fill="%s"/><circle cx="%s" cy="%s" r="6" '
        .. 'fill="none" stroke="%s" stroke-width="1.5"/>'):format(n1(lx), n1(ly), RECORD_COLOUR,
        n1(lx), n1(ly), COLOUR.late) end },
    { "late record dropped", function(o, lx, ly) cross(o, lx, ly, 4, DROP_COLOUR) end },
    { "window that fired", function(o, lx, ly)
      o[#o + 1] = ('<rect x="%s" y="%s" width="18" height="10" rx="2" fill="%s" stroke="%s"/>')
        :format(n1(lx - 9), n1(ly - 5), FILL["on time"], COLOUR["on time"]) end },
    { "window still open", function(o, lx, ly)
      o[#o + 1] = ('<rect x="%s" y="%s" width="18" height="10" rx="2" fill="#fff" stroke="#888" '
        .. 'stroke-dasharray="3 2"/>'):format(n1(lx - 9), n1(ly - 5)) end },
    { "fire: on time", function(o, lx, ly) mark(o, "on time", lx, ly, 5) end },
    { "late fire (allowed lateness)", function(o, lx, ly) mark(o, "late", lx, ly, 5) end },
    { "early fire (trigger)", function(o, lx, ly) mark(o, "early", lx, ly, 5) end },
    { "purged", function(o, lx, ly) mark(o, "purged", lx, ly, 5) end },
    { "watermark", function(o, lx, ly)
      o[#o + 1] = ('<path d="M%s %sh18" stroke="%s" stroke-width="2"/>'):format(n1(lx - 9),
        n1(ly), WM_COLOUR) end },
    { "idle input", function(o, lx, ly)
      o[#o + 1] = ('<rect x="%s" y="%s" width="18" height="10" fill="#fff3c4" stroke="#e0b000"/>')
        :format(n1(lx - 9), n1(ly - 5)) end },
  }
  text(body, L - 110, y, "legend", 'font-size="12" font-weight="bold"')
  local col_w = 200
  for i, it in ipairs(items) do
    local c, r = (i - 1) % 4, math.floor((i - 1) / 4)
    local lx, ly = L - 40 + c * col_w, y + r * 20
    it[2](body, lx, ly - 4)
    text(body, lx + 14, ly, it[1], 'font-size="11"')
  end
  y = y + math.ceil(#items / 4) * 20 + 8
  local H = math.floor(y + 0.5)
  out[1] = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
    .. 'font-family="DejaVu Sans, Verdana, sans-serif">'):format(W, H, W, H)
  out[2] = ('<rect width="%d" height="%d" fill="#ffffff"/>'):format(W, H)
  for _, s in ipairs(lane_lines) do
    out[#out + 1] = s
  end
  for _, s in ipairs(body) do
    out[#out + 1] = s
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n") .. "\n", lanes_bottom
end

local function write_file(path, text_)
  local f, err = io.open(path, "wb")
  if not f then
    return nil, err
  end
  local ok, werr = f:write(text_)
  local cok, cerr = f:close()
  if not ok or not cok then
    return nil, ("%s: %s"):format(path, tostring(werr or cerr))
  end
  return true
end
M.write_file = write_file

---The REPL's `:draw --svg FILE`: writes the picture of what rec recorded; returns what to say.
function M.draw_command(rec, arg)
  local path = arg:match("^%-%-svg%s+(%S.-)%s*$")
  if not path then
    return ":draw --svg needs a FILE (:draw --svg timeline.svg)"
  end
  if not rec then
    return "nothing to draw yet: no job has run (:start)"
  end
  local d = M.snapshot(rec)
  local ok, err = write_file(path, M.svg(d))
  if not ok then
    return (":draw --svg: cannot write %s"):format(err)
  end
  return ("wrote %s: %d record(s), %d fire(s), %d key(s)"):format(path, #d.elements, #d.fires,
    #d.keys)
end

-- weir timeline -----------------------------------------------------------------------------

---Runs plan as `weir run` would, recording; then writes -o FILE.svg and --data FILE.
function M.execute(plan)
  local run = require("weir.run")
  local opts = plan.env.job
  for _, what in ipairs({ { "-o", opts.output }, { "--data", opts.data } }) do
    -- before the job runs: a file that cannot be written is said at once
    if what[2] then
      local f, err = io.open(what[2], "ab")
      if not f then
        run.job_error(("timeline: cannot write %s %s"):format(what[1], err))
      end
      f:close()
    end
  end
  local job = run.new(plan)
  job.trace = M.new_trace()
  local rec, data
  local ok, err = pcall(function()
    job:start()
    rec = M.attach(job)
    job:run_loop()
    job:finish()
  end)
  if rec then
    data = M.snapshot(rec, { script = opts.script, params = opts.params })
  end
  local code = job:close()
  if data then
    -- also after a failure: the picture shows what happened up to it
    if opts.output then
      local wok, werr = write_file(opts.output, M.svg(data))
      if not wok then
        run.job_error(("timeline: cannot write -o %s"):format(werr))
      end
    end
    if opts.data then
      local wok, werr = write_file(opts.data, M.data_text(data))
      if not wok then
        run.job_error(("timeline: cannot write --data %s"):format(werr))
      end
    end
  end
  if not ok then
    error(err, 0)
  end
  job:check_output(code)
end

return M
