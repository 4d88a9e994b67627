-- weir.timeline_svg: the SVG picture of a timeline snapshot (weir.timeline_record's plain data):
-- the layout (an event-time axis, per key a lane of records and windows in rows that do not
-- overlap, below it the watermark over processing time with the records as they arrived, the
-- fires and idle inputs), the marks and the legend; and ms_text, the short durations the
-- picture and weir.sweep print. Deterministic: the same data gives the same bytes.
local M = {}

local INF = math.huge

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
local W, L, R = 960, 120, 30 -- the picture's width, its left margin (the keys), right margin
local PW = W - L - R         -- the plot's width
local PH = 260               -- the processing-time panel's height

-- An operator label without the script's folder: "window ... (job.lua:30)".
local function short(label)
  return (label:gsub("%(([^()]*/)([^/()]+:%d+)%)", "(%2)"))
end

-- Layout ------------------------------------------------------------------------------------

-- The windows per (key, window), in the order first seen: their fires, whether still open.
local function windows_of(d)
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
  return order
end

-- The event-time range (records, late records, finite windows) and x(t), its place across the
-- plot; the range's first time (before the margin) chooses the axis's origin.
local function event_scale(d, order)
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
  return x, lo, hi, first_t
end

-- The processing-time range: arrivals, fires, watermarks, idle periods, the end.
local function processing_range(d)
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
  return p0, p1
end

-- Per element of d.elements, whether it came when the watermark had passed it (kept: within
-- the allowed lateness): the watermark at its arrival is the least over the window operators.
local function late_kept(d)
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
  local kept = {}
  for i, e in ipairs(d.elements) do
    kept[i] = e.ts <= wm_at(e.at)
  end
  return kept
end

-- Drawing -----------------------------------------------------------------------------------
-- Each part below appends to c.body (c: the snapshot d, the scale x, the lanes, the running y).

local function ring(body, cx, cy, r)
  body[#body + 1] = ('<circle cx="%s" cy="%s" r="%s" fill="none" stroke="%s" stroke-width="1.5"/>')
    :format(n1(cx), n1(cy), n1(r), COLOUR.late)
end

-- The title: the job, its script, and what happened (fires by kind, drops, the parameters).
local function title(c, order)
  local d, body = c.d, c.body
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
  local y = 24
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
  c.y = y + 28
end

-- The event-time axis over the lanes: its heading, origin and tick labels (c.eticks, whose grid
-- lines the processing-time panel draws down to its bottom from c.grid_top).
local function event_axis(c)
  local d, body, y = c.d, c.body, c.y
  local eticks, eorigin = axis(c.lo, c.hi, 8, c.first_t)
  text(body, L, y, "per key: records and windows (event time \226\134\146" .. (d.processing_windows
    and "; processing-time windows: their spans are processing time)" or ")"),
    'font-size="13" font-weight="bold"')
  text(body, L + PW, y, origin_text(eorigin, "event time"), 'font-size="11" text-anchor="end"')
  y = y + 8
  c.grid_top = y
  local axis_y = y + 14
  for _, t in ipairs(eticks) do
    text(body, c.x(t.t), axis_y - 2, t.text, 'font-size="10" text-anchor="middle" fill="#555"')
  end
  c.eticks = eticks
  c.y = axis_y + 6
end

-- The lanes: per key shown (c.shown), its windows in rows that do not overlap (sliding windows
-- take several). Sets c.lanes (top, windows, rows per key) and c.lane_lines (every other
-- lane's shade, drawn under everything).
local function layout_lanes(c, order)
  local by_key = {}
  for _, w in ipairs(order) do
    by_key[w.key] = by_key[w.key] or {}
    table.insert(by_key[w.key], w)
  end
  local lanes, y = {}, c.y
  for k = 1, c.shown do
    local list = by_key[k] or {}
    table.sort(list, function(a, b)
      if a.start ~= b.start then
        return a.start < b.start
      end
      return a.stop < b.stop
    end)
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
  c.lanes, c.y = lanes, y
  local lane_lines = {}
  for k = 2, c.shown, 2 do
    local lane = lanes[k]
    lane_lines[#lane_lines + 1] = ('<rect x="%d" y="%s" width="%d" height="%s" fill="#f7f7f7"/>')
      :format(0, n1(lane.top - 2), W, n1(20 + lane.rows * 15 + 8))
  end
  c.lane_lines = lane_lines
end

-- Each lane's key and windows: a window filled by its first fire's kind (dashed when still
-- open and never fired), its fires right to left from its end (a count when they do not fit).
local function draw_windows(c)
  local body, x = c.body, c.x
  for k = 1, c.shown do
    local lane = c.lanes[k]
    text(body, L - 10, lane.top + 10 + 4, c.d.keys[k], 'font-size="12" text-anchor="end"')
    for _, w in ipairs(lane.windows) do
      local wy = lane.top + 20 + (w.row - 1) * 15
      local x1, x2 = x(w.start), x(w.stop)
      local first = w.fires[1] and w.fires[1].kind
      if w.open and not first then
        body[#body + 1] = ('<rect x="%s" y="%s" width="%s" height="11" rx="2" fill="#ffffff" '
          .. 'stroke="#888" stroke-dasharray="3 2"/>'):format(n1(x1), n1(wy),
          n1(math.max(1, x2 - x1 - 1)))
      else
        body[#body + 1] = ('<rect x="%s" y="%s" width="%s" height="11" rx="2" fill="%s" '
          .. 'stroke="%s"/>'):format(n1(x1), n1(wy), n1(math.max(1, x2 - x1 - 1)),
          FILL[first] or FILL["on time"], COLOUR[first] or COLOUR["on time"])
      end
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
end

-- The records on their key's lane (ringed when kept late), the late records dropped (crosses),
-- and what was not drawn.
local function draw_lane_records(c)
  local d, body, x, lanes, shown = c.d, c.body, c.x, c.lanes, c.shown
  for i, e in ipairs(d.elements) do
    if e.key <= shown then
      body[#body + 1] = ('<circle cx="%s" cy="%s" r="3.5" fill="%s"/>'):format(n1(x(e.ts)),
        n1(lanes[e.key].top + 10), RECORD_COLOUR)
      if c.kept[i] then
        ring(body, x(e.ts), lanes[e.key].top + 10, 6)
      end
    end
  end
  for _, e in ipairs(d.late) do
    if e.key <= shown then
      cross(body, x(e.ts), lanes[e.key].top + 10, 4, DROP_COLOUR)
    end
  end
  if #d.keys > shown then
    text(body, L, c.y + 4, ("(%d more key(s) not drawn)"):format(#d.keys - shown),
      'font-size="11"')
    c.y = c.y + 16
  end
  if #d.keys == 0 then
    text(body, L, c.y + 12, "(no record reached a window)", 'font-size="12"')
    c.y = c.y + 24
  end
end

-- The idle inputs as bands across the processing-time panel, each labelled (staggered, so that
-- bands that start together stay legible).
local function draw_idle(c)
  local body, py = c.body, c.py
  for i, p in ipairs(c.d.idle) do
    local y1, y2 = py(p.from), py(p.to)
    body[#body + 1] = ('<rect x="%d" y="%s" width="%d" height="%s" fill="#fff3c4" '
      .. 'fill-opacity="0.6" stroke="#e0b000" stroke-dasharray="4 2"/>'):format(L, n1(y1), PW,
      n1(math.max(2, y2 - y1)))
    local ty = y1 + 11 + ((i - 1) % 3) * 11
    if ty > c.PT + PH - 16 then
      ty = y1 - 3 - ((i - 1) % 3) * 11 -- above a band that starts near the bottom
    end
    text(body, L + PW - 4, ty, ("idle: %s %d/%d from %s%s"):format(
      short(p.operator), p.subtask + 1, p.parallelism, M.ms_text(p.from - c.porigin),
      p.open and " (still idle)" or (" to " .. M.ms_text(p.to - c.porigin))),
      'font-size="10" text-anchor="end" fill="#8a6d00"')
  end
end

-- One step line per window operator (dashed after the first): the watermark (x) as processing
-- time (y) went by, labelled where it reached +inf (the end of input) or, with several, by name.
local function draw_watermarks(c)
  local d, body, x, py = c.d, c.body, c.x, c.py
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
      body[#body + 1] = ('<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>'):format(
        table.concat(path), WM_COLOUR, i > 1 and (' stroke-dasharray="%d 3"'):format(2 + 3 * i)
        or "")
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
end

-- The panel under the lanes: processing time down (c.py), event time across; idle bands, the
-- records as they arrived, the watermarks, the fires at their window's end, the event-time grid.
local function draw_processing(c)
  local d, body, x = c.d, c.body, c.x
  local y = c.y + 24
  text(body, L, y, "watermark over processing time (processing time \226\134\147), with the "
    .. "records as they arrived and the fires", 'font-size="13" font-weight="bold"')
  local pticks, porigin = axis(c.p0, c.p1, 6, c.p0)
  text(body, L + PW, y + 14, origin_text(porigin, "processing time"),
    'font-size="11" text-anchor="end"')
  local PT, p0, p1 = y + 24, c.p0, c.p1
  local function py(t)
    if t <= p0 then
      return PT
    elseif t >= p1 then
      return PT + PH
    end
    return PT + (t - p0) / (p1 - p0) * PH
  end
  c.PT, c.py, c.porigin = PT, py, porigin
  body[#body + 1] = ('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#bbb"/>')
    :format(L, PT, PW, PH)
  draw_idle(c)
  for _, t in ipairs(pticks) do
    body[#body + 1] = ('<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#eee"/>'):format(L,
      n1(py(t.t)), L + PW, n1(py(t.t)))
    text(body, L - 6, py(t.t) + 3, t.text, 'font-size="10" text-anchor="end" fill="#555"')
  end
  for i, e in ipairs(d.elements) do
    body[#body + 1] = ('<circle cx="%s" cy="%s" r="2.5" fill="%s" fill-opacity="0.6"/>'):format(
      n1(x(e.ts)), n1(py(e.at)), RECORD_COLOUR)
    if c.kept[i] then
      ring(body, x(e.ts), py(e.at), 5)
    end
  end
  for _, e in ipairs(d.late) do
    cross(body, x(e.ts), py(e.at), 3.5, DROP_COLOUR)
  end
  draw_watermarks(c)
  for _, f in ipairs(d.fires) do
    mark(body, f.kind, x(f.stop), py(f.at), 5)
  end
  for _, t in ipairs(c.eticks) do
    body[#body + 1] = ('<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#eee"/>'):format(
      n1(x(t.t)), c.grid_top, n1(x(t.t)), PT + PH)
  end
  c.y = PT + PH + 36
end

-- The legend: each mark the picture uses and what it means, four to a row.
local LEGEND = {
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

local function draw_legend(c)
  local body, y = c.body, c.y
  text(body, L - 110, y, "legend", 'font-size="12" font-weight="bold"')
  local col_w = 200
  for i, it in ipairs(LEGEND) do
    local col, row = (i - 1) % 4, math.floor((i - 1) / 4)
    local lx, ly = L - 40 + col * col_w, y + row * 20
    it[2](body, lx, ly - 4)
    text(body, lx + 14, ly, it[1], 'font-size="11"')
  end
  c.y = y + math.ceil(#LEGEND / 4) * 20 + 8
end

---The SVG picture of a snapshot (deterministic: the same data gives the same bytes), and the
---y where the lanes end.
function M.svg(d)
  local order = windows_of(d)
  local x, lo, hi, first_t = event_scale(d, order)
  local p0, p1 = processing_range(d)
  local c = { d = d, body = {}, x = x, lo = lo, hi = hi, first_t = first_t, p0 = p0, p1 = p1,
              shown = math.min(#d.keys, MAX_KEYS), kept = late_kept(d), y = 0 }
  title(c, order)
  event_axis(c)
  layout_lanes(c, order)
  local lanes_bottom = c.y
  draw_windows(c)
  draw_lane_records(c)
  draw_processing(c)
  draw_legend(c)
  local H = math.floor(c.y + 0.5)
  local out = {}
  out[1] = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
    .. 'font-family="DejaVu Sans, Verdana, sans-serif">'):format(W, H, W, H)
  out[2] = ('<rect width="%d" height="%d" fill="#ffffff"/>'):format(W, H)
  for _, s in ipairs(c.lane_lines) do
    out[#out + 1] = s
  end
  for _, s in ipairs(c.body) do
    out[#out + 1] = s
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n") .. "\n", lanes_bottom
end

return M
