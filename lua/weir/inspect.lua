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
    return "every input is idle"
  end
  local from, sub, p = status.channel_source(node, inst, best.ch)
  return ("input %d from %s subtask %d/%d at %s"):format(best.ch, from, sub + 1, p,
    status.wm_text(best.w))
end

---:why: for each pending window, what it waits for and which input holds it back.
function M.why(job, say)
  local any = false
  for _, node in ipairs(job.timer_nodes) do
    for _, inst in ipairs(node.instances) do
      local list = windowing.windows(node, inst)
      table.sort(list, function(a, b)
        if a.window.stop ~= b.window.stop then
          return a.window.stop < b.window.stop
        end
        return format.value(a.key) < format.value(b.key)
      end)
      for _, e in ipairs(list) do
        local w, key, wait = e.window, e.key, e.waits_for
        any = true
        if node.assigner.is_event_time then
          say(("key %s window %s waits for the watermark to reach %s; it is %s, held back by "
            .. "%s"):format(format.value(key), tostring(w), status.wm_text(wait),
            status.wm_text(inst.watermark), holder(node, inst)))
        else
          say(("key %s window %s waits for processing time %s (now %s)"):format(
            format.value(key), tostring(w), status.wm_text(wait), status.wm_text(job:now())))
        end
      end
    end
  end
  if not any then
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

---:draw: a timeline of records, windows and the watermark (job may be nil; with_colour
---for a terminal).
function M.draw(job, trace, with_colour, say)
  if not job or not trace or #trace.keys == 0 then
    return say(job and "nothing to draw yet" or "no job is running (:start)")
  end
  local width = 60
  local lo, hi = INF, -INF
  for _, key in ipairs(trace.keys) do
    for _, ts in ipairs(trace.elements[key]) do
      lo, hi = math.min(lo, ts), math.max(hi, ts)
    end
  end
  local windows = {}
  for _, node in ipairs(job.timer_nodes) do
    for _, inst in ipairs(node.instances) do
      for _, e in ipairs(windowing.windows(node, inst)) do
        windows[#windows + 1] = { key = e.key, start = e.window.start, stop = e.window.stop,
                                  what = "open" }
      end
    end
  end
  for _, f in ipairs(trace.fired) do
    windows[#windows + 1] = f
  end
  table.sort(windows, function(a, b)
    if a.start ~= b.start then
      return a.start < b.start
    end
    if a.stop ~= b.stop then
      return a.stop < b.stop
    end
    return a.what < b.what
  end)
  for _, w in ipairs(windows) do
    if w.start > -INF and w.stop < INF then
      lo, hi = math.min(lo, w.start), math.max(hi, w.stop)
    end
  end
  local wm = INF
  for _, node in ipairs(job.timer_nodes) do
    for _, inst in ipairs(node.instances) do
      wm = math.min(wm, inst.watermark)
    end
  end
  if wm > -INF and wm < INF then
    lo, hi = math.min(lo, wm), math.max(hi, wm + 1)
  end
  if hi <= lo then
    hi = lo + 1
  end
  local per = (hi - lo) / width
  local function col(t)
    return math.max(0, math.min(width - 1, math.floor((t - lo) / per)))
  end
  say(("event time %s .. %s, one column = %s ms; watermark %s"):format(status.wm_text(lo),
    status.wm_text(hi), format.value(math.ceil(per)), status.wm_text(wm)))
  local wcol = (wm > -INF and wm < INF) and col(wm) or nil
  for _, key in ipairs(trace.keys) do
    local row = {}
    for i = 1, width do
      row[i] = " "
    end
    for _, ts in ipairs(trace.elements[key]) do
      row[col(ts) + 1] = "x"
    end
    if wcol and row[wcol + 1] == " " then
      row[wcol + 1] = "|"
    end
    say(("%-8s %s"):format(format.value(key):sub(1, 8), table.concat(row)))
    local drawn = {}
    for _, w in ipairs(windows) do
      if w.key == key and w.start > -INF then
        local id = w.start .. ":" .. w.stop
        local mark = w.what == "open" and "-" or (w.what == "purged" and "P" or "F")
        if not drawn[id] or mark ~= "-" then
          drawn[id] = true
          local line = {}
          for i = 1, width do
            line[i] = " "
          end
          local a, b = col(w.start), col(w.stop - 1)
          for i = a, b do
            line[i + 1] = mark == "-" and "-" or "="
          end
          line[a + 1] = "["
          line[b + 1] = ")"
          local tag = mark == "-" and "open" or (mark == "P" and "purged" or "fired")
          say(("%-8s %s %s"):format("", colour(with_colour, mark == "-" and "33" or "32",
            table.concat(line)), tag .. " " .. ("[%s, %s)"):format(status.wm_text(w.start),
            status.wm_text(w.stop))))
        end
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
