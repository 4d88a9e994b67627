-- weir.inspect: the REPL's inspectors (:status, :windows, :timers, :why, :late, :draw). Each
-- reads a running job's windows only through weir.windowing and its watermarks through
-- weir.status, and writes lines through say(text).
local C = require("weir.ffi")
local format = require("weir.format")
local status = require("weir.status")
local windowing = require("weir.windowing")

local M = {}

local INF = math.huge

---:status: each operator subtask's input watermarks, idleness and valve output.
function M.status(job, say)
  local text = status.text(status.collect(job))
  say((text:gsub("\n$", "")))
end

---:windows [key]: the open windows, their elements and the time each waits for.
function M.windows(job, key, say)
  local any = false
  for _, op in ipairs(status.collect(job).operators) do
    for _, sub in ipairs(op.subtasks) do
      for _, w in ipairs(sub.windows or {}) do
        if not key or key == "" or format.value(w.key) == key then
          any = true
          say(("%s subtask %d: key %s window %s: %d element(s), %s"):format(op.label,
            sub.index + 1, format.value(w.key), tostring(w.window), w.elements,
            status.waits_text(w)))
        end
      end
    end
  end
  if not any then
    say("no open windows")
  end
end

---:timers: pending timers per window operator subtask.
function M.timers(job, say)
  for _, node in ipairs(job.timer_nodes) do
    for _, inst in ipairs(node.instances) do
      local ws = windowing.stats(node, inst)
      say(("%s subtask %d: %d event-time timer(s), next %s; %d processing-time, next %s")
        :format(node.label, inst.index + 1, ws.event_timers, status.wm_text(ws.next_event_timer),
          ws.processing_timers, status.wm_text(ws.next_processing_timer)))
    end
  end
end

local function holder(node, inst)
  local best
  for ch = 0, node.channels - 1 do
    local state = C.weir_valve_channel_state(inst.valve, ch)
    local w = C.weir_valve_channel_watermark(inst.valve, ch)
    if state == 3 and (not best or w < best.w) then
      best = { ch = ch, w = w }
    end
  end
  if not best then
    return "; every input is idle, so it moves only when one becomes active again"
  end
  local from, sub, p = status.channel_source(node, inst, best.ch)
  return (", held back by input %d from %s subtask %d/%d at %s"):format(best.ch, from, sub + 1,
    p, status.wm_text(best.w))
end

---What each window of the job waits for, as :why says it: per window operator subtask and
---window (by end, then key), { node, inst, key, window, waits (weir.windowing's: what, time,
---count, have), status, cleanup, fired, text }.
function M.promises(job)
  local out = {}
  for _, node in ipairs(job.timer_nodes) do
    for _, inst in ipairs(node.instances) do
      for _, e in ipairs(windowing.windows(node, inst)) do
        local x, head = e.waits, ("key %s window %s "):format(format.value(e.key),
          tostring(e.window))
        local wm = ("; it is %s%s"):format(status.wm_text(inst.watermark), holder(node, inst))
        local text
        if x.what == "watermark" then
          text = ("waits for the watermark to reach %s%s"):format(status.wm_text(x.time), wm)
        elseif x.what == "cleanup" then
          text = ("%s; it is kept for late records until the watermark reaches %s (allowed "
            .. "lateness %s ms), then cleaned up%s"):format(
            e.fired and "has fired" or "is past its end", status.wm_text(x.time),
            format.value(node.lateness), wm)
        elseif x.what == "processing time" then
          text = ("waits for processing time %s (now %s)"):format(status.wm_text(x.time),
            status.wm_text(status.now(job)))
        elseif x.what == "count" then
          text = ("waits for a count of %d element(s) (%d so far)"):format(x.count, x.have)
        else
          text = "waits for its trigger (no timer is registered)"
        end
        out[#out + 1] = { node = node, inst = inst, key = e.key, window = e.window,
                          waits = x, status = e.status, cleanup = e.cleanup, fired = e.fired,
                          text = head .. text }
      end
    end
  end
  return out
end

---:why: for each pending window, what it waits for and which input holds it back.
function M.why(job, say)
  local list = M.promises(job)
  for _, p in ipairs(list) do
    say(p.text)
  end
  if #list == 0 then
    say("no pending windows")
  end
end

---:late: recent late records (trace: the job's trace, or nil) and the watermark then.
function M.late(trace, say)
  local log = trace and trace.late or {}
  if #log == 0 then
    return say("no late records")
  end
  for _, l in ipairs(log) do
    say(("%s: %s (timestamp %s) came when the watermark was %s"):format(l.operator,
      format.value(l.value), status.wm_text(l.ts), status.wm_text(l.watermark)))
  end
end

-- :draw --------------------------------------------------------------------------------------

local function colour(on, code, text)
  if on then
    return "\27[" .. code .. "m" .. text .. "\27[0m"
  end
  return text
end

local LABEL = 9 -- a key's column, with its space

-- The width to draw in: COLUMNS when it is a number (the terminal's), else 80.
local function columns()
  local c = tonumber(os.getenv("COLUMNS") or "")
  if c and c >= 40 and c <= 1000 then
    return math.floor(c)
  end
  return 80
end

-- Each window of the trace once, per window operator and key: { op (the operator's number),
-- key, start, stop, fired (times), purged (times), status (open, kept: still held; nil: gone)
-- }, in order of operator, start, then stop.
local function window_rows(job, trace)
  local rows, by, ops, n = {}, {}, {}, 0
  for _, node in ipairs(job.plan.nodes) do -- numbered as :windows and :status list them
    if windowing.runs(node) then
      n = n + 1
      ops[node] = n
    end
  end
  local function row(node, key, start, stop)
    local id = ("%d %s %s %s"):format(ops[node] or 0, format.value(key), format.value(start),
      format.value(stop))
    local r = by[id]
    if not r then
      r = { op = ops[node] or 0, key = key, start = start, stop = stop, fired = 0, purged = 0 }
      by[id] = r
      rows[#rows + 1] = r
    end
    return r
  end
  for _, f in ipairs(trace.fired) do
    local r = row(f.node, f.key, f.start, f.stop)
    if f.what == "purged" then
      r.purged = r.purged + 1
    else
      r.fired = r.fired + 1
    end
  end
  for _, node in ipairs(job.timer_nodes) do
    for _, inst in ipairs(node.instances) do
      for _, e in ipairs(windowing.windows(node, inst)) do
        row(node, e.key, e.window.start, e.window.stop).status = e.status
      end
    end
  end
  table.sort(rows, function(a, b)
    if a.op ~= b.op then
      return a.op < b.op
    end
    if a.start ~= b.start then
      return a.start < b.start
    end
    return a.stop < b.stop
  end)
  return rows
end

local function times_text(what, n)
  if n == 0 then
    return nil
  end
  return n == 1 and what or ("%s %dx"):format(what, n)
end

-- What a window row says: "open", "fired", "fired 2x, kept", "purged", ... (with several
-- window operators, "#n" first: the n-th, as :windows lists them)
local function row_tag(r, several)
  local parts = {}
  if several then
    parts[1] = "#" .. r.op
  end
  parts[#parts + 1] = times_text("fired", r.fired)
  parts[#parts + 1] = times_text("purged", r.purged)
  parts[#parts + 1] = r.status
  return table.concat(parts, ", ")
end

local function bounds_text(r)
  if r.start == -INF and r.stop == INF then
    return "GlobalWindow"
  end
  return ("[%s, %s)"):format(status.wm_text(r.start), status.wm_text(r.stop))
end

-- The axis: event time (or processing time when every window operator runs on it), the
-- range of every finite time drawn, and the line (the lowest watermark, or now).
local function axis(job, trace, rows)
  local processing = #job.timer_nodes > 0
  local line = INF
  for _, node in ipairs(job.timer_nodes) do
    processing = processing and not node.assigner.is_event_time
    for _, inst in ipairs(node.instances) do
      line = math.min(line, inst.watermark)
    end
  end
  if processing then
    line = status.now(job)
  end
  local lo, hi = INF, -INF
  local function see(t)
    if t > -INF and t < INF then
      lo, hi = math.min(lo, t), math.max(hi, t)
    end
  end
  for _, key in ipairs(trace.keys) do
    for _, ts in ipairs(trace.elements[key]) do
      see(ts)
    end
  end
  for _, r in ipairs(rows) do
    see(r.start)
    see(r.stop)
  end
  see(line)
  if lo == INF then
    lo, hi = 0, 1
  end
  if hi <= lo then
    hi = lo + 1
  end
  return { processing = processing, line = line, lo = lo, hi = hi }
end

---:draw: a timeline of records, windows and the watermark (job may be nil; with_colour
---for a terminal), in cols columns (default: COLUMNS, or 80).
function M.draw(job, trace, with_colour, say, cols)
  if not job or not trace or #trace.keys == 0 then
    return say(job and "nothing to draw yet" or "no job is running (:start)")
  end
  local rows = window_rows(job, trace)
  local ax = axis(job, trace, rows)
  cols = cols or columns()
  -- the tags go right of the axis; the bounds too when the axis keeps 30 columns
  local long = 0
  for _, r in ipairs(rows) do
    r.tag = row_tag(r, #job.timer_nodes > 1)
    long = math.max(long, #r.tag + 1 + #bounds_text(r))
  end
  local with_bounds = cols - LABEL - 1 - long >= 30
  local tags = 0
  for _, r in ipairs(rows) do
    if with_bounds then
      r.tag = r.tag .. " " .. bounds_text(r)
    end
    tags = math.max(tags, #r.tag)
  end
  local width = math.max(10, cols - LABEL - 1 - tags)
  for _, r in ipairs(rows) do -- only in a very narrow terminal: the tags are cut to fit
    r.tag = r.tag:sub(1, math.max(0, cols - LABEL - 1 - width))
  end
  local lo, per = ax.lo, (ax.hi - ax.lo) / width
  local function col(t)
    if t == -INF then
      return 0
    elseif t == INF then
      return width - 1
    end
    return math.max(0, math.min(width - 1, math.floor((t - lo) / per)))
  end
  local wcol = (ax.line > -INF and ax.line < INF) and col(ax.line) or nil
  local function finish(cells)
    if wcol and (cells[wcol + 1] == " " or cells[wcol + 1] == "-" or cells[wcol + 1] == "=") then
      cells[wcol + 1] = "|"
    end
    return table.concat(cells)
  end
  local what = ax.processing and "processing time" or "event time"
  local line_name = ax.processing and "now" or "watermark"
  -- the header's parts, joined into lines that fit
  local parts = { ("%s %s .. %s"):format(what, status.wm_text(ax.lo), status.wm_text(ax.hi)),
                  ("one column = %s ms"):format(format.value(math.max(1, math.ceil(per)))),
                  ("%s %s%s"):format(line_name, status.wm_text(ax.line),
                    wcol and " (the | line)" or "") }
  if #parts[1] > cols then
    parts = { ("%s from %s"):format(what, status.wm_text(ax.lo)),
              ("to %s"):format(status.wm_text(ax.hi)), parts[2], parts[3] }
  end
  local head = parts[1]
  for i = 2, #parts do
    if #head + 2 + #parts[i] <= cols then
      head = head .. (i == #parts and "; " or ", ") .. parts[i]
    else
      say(head)
      head = parts[i]
    end
  end
  say(head)
  for _, key in ipairs(trace.keys) do
    local cells = {}
    for i = 1, width do
      cells[i] = " "
    end
    for _, ts in ipairs(trace.elements[key]) do
      cells[col(ts) + 1] = "x"
    end
    say(("%-8s %s"):format(format.value(key):sub(1, 8), finish(cells)))
    for _, r in ipairs(rows) do
      if r.key == key or (key == "nan" and r.key ~= r.key) then
        local bar = {}
        for i = 1, width do
          bar[i] = " "
        end
        local a, b = col(r.start), col(r.stop == INF and INF or r.stop - 1)
        local done = r.fired + r.purged > 0
        for i = a, b do
          bar[i + 1] = done and "=" or "-"
        end
        bar[a + 1] = r.start == -INF and "<" or "["
        bar[b + 1] = r.stop == INF and ">" or ")"
        say(("%-8s %s %s"):format("", colour(with_colour, done and "32" or "33", finish(bar)),
          r.tag))
      end
    end
  end
  for _, node in ipairs(job.assigners) do
    for st = 0, node.parallelism - 1 do
      if node.emitters[st].idle then
        say(colour(with_colour, "31", ("idle: %s subtask %d/%d"):format(node.label, st + 1,
          node.parallelism)))
      end
    end
  end
end

return M
