-- weir.status: what a running job looks like from inside: every operator subtask's input
-- channels and valve, the pending windows, and the counters behind --progress, the stall
-- warning and `kill -USR1` (DESIGN.md: visibility).
-- Report code, run once per job or per status request: never traced, so that a one-off loop
-- LuaJIT's shared hot counters make look hot cannot abort a trace (weir.codegen, "Set-up code") --
-- but for check_stall, which the per-tick sweep calls (jit.on below).
jit.off(true, true)
local C = require("weir.ffi")
local duration = require("weir.duration")
local format = require("weir.format")
local memory = require("weir.memory")
local windowing = require("weir.windowing")
local alignment = require("weir.alignment")
local kafka_health = require("weir.kafka_health")

local M = {}

local INF = math.huge
local MAX_WINDOWS = 20

local function wm_text(w)
  if w == -INF then
    return "-inf"
  elseif w == INF then
    return "+inf"
  end
  return format.value(w)
end
M.wm_text = wm_text

---The job's processing time; for a job that has ended (its runtime closed), the time it was
---left at (job.now_override), or -inf: the inspectors read an ended job too.
function M.now(job)
  if job.rt == nil then
    return job.now_override or -INF
  end
  return job:now()
end

---What a window waits for (weir.windowing.windows' waits), after "N element(s), ".
function M.waits_text(w)
  local x = w.waits
  if not x or x.what == "watermark" or x.what == "processing time" then
    return "waits for " .. wm_text(w.waits_for)
  elseif x.what == "cleanup" then
    return ("%s, kept for late records until the watermark reaches %s"):format(
      w.fired and "fired" or "past its end", wm_text(x.time))
  elseif x.what == "count" then
    return ("waits for a count of %d (%d so far)"):format(x.count, x.have)
  end
  return "waits for its trigger (no timer)"
end

---The upstream end of input channel ch of a subtask: label, its subtask index, and whether
---it is a side output.
local function channel_source(node, inst, ch)
  for _, p in ipairs(node.inputs) do
    if ch >= p.offset and ch < p.offset + p.channels then
      local sub = p.mode == "forward" and inst.index or (ch - p.offset)
      local label = p.node.label
      if p.tag then
        label = label .. (" (side output '%s')"):format(p.tag.id)
      end
      return label, sub, p.node.parallelism
    end
  end
  return "?", 0, 1
end
M.channel_source = channel_source

local function channels_of(node, inst)
  local out = {}
  for ch = 0, node.channels - 1 do
    local from, sub, p = channel_source(node, inst, ch)
    local state = C.weir_valve_channel_state(inst.valve, ch)
    out[#out + 1] = {
      channel = ch, from = from, subtask = sub, parallelism = p,
      watermark = C.weir_valve_channel_watermark(inst.valve, ch),
      active = state % 2 == 1, aligned = state >= 2,
    }
  end
  return out
end

---A table describing the job now (env:status()). lazy (M.final): the window subtasks'
---`windows` lists are left to M.settle, and the second result is what it needs to make them:
---{ job, now, list of { sub, node, inst } }, or nil when there are none. (It is the caller's
---to keep, next to the table: a weak-keyed table of them kept every job alive, as LuaJIT's weak
---keys are no ephemerons and the record leads back to its status table through the job.)
function M.collect(job, lazy)
  local todo = lazy and {} or nil
  local s = { processing_time = M.now(job), records_in = job.records_in,
              records_out = job.out_count[1], operators = {} }
  for _, node in ipairs(job.plan.nodes) do
    local op = { label = node.label, parallelism = node.parallelism, subtasks = {} }
    for _, inst in ipairs(node.instances or {}) do
      local sub = { index = inst.index, watermark = inst.watermark }
      if inst.valve then
        sub.idle = C.weir_valve_is_idle(inst.valve) == 1
        sub.valve_output = C.weir_valve_output(inst.valve)
        sub.channels = channels_of(node, inst)
      end
      local em = node.emitters and node.emitters[inst.index]
      if em then -- a timestamp assigner: the watermark its generator emits
        sub.emits, sub.emits_idle = em.current, em.idle
      end
      if windowing.runs(node) then
        local ws = windowing.stats(node, inst)
        sub.open_windows, sub.elements = ws.open_windows, ws.elements
        if todo then
          todo[#todo + 1] = { sub, node, inst }
        else
          sub.windows = windowing.windows(node, inst)
        end
        sub.next_event_timer = ws.next_event_timer
      end
      op.subtasks[#op.subtasks + 1] = sub
    end
    op.late_dropped = node.late_dropped
    s.operators[#s.operators + 1] = op
  end
  s.kafka = kafka_health.collect(job) -- Kafka sources: brokers and partitions (or nil)
  s.alignment = alignment.report(job) -- watermark alignment: groups, and what is paused
  if todo and #todo > 0 then
    return s, { job = job, now = M.now(job), list = todo }
  end
  return s
end

---The status of a job as it ends (Job:finish; env:status() after execute() returns it through
---M.settle): collect's table, but every window list is made only when first read, from the
---window state as the job left it (nothing changes it after the end; listing a million open
---windows of a stopped job takes seconds, and most jobs never ask).
function M.final(job)
  return M.collect(job, true)
end

---s with its window lists made from p, M.final's second result (the processing time is the
---job's at its end, as collect saw it); s itself (nil stays nil). p is spent: pass it once.
function M.settle(s, p)
  if not (s and p) then
    return s
  end
  local job = p.job
  local saved = job.now_override
  job.now_override = p.now -- an ended job's windows are listed at the time it ended
  local ok, err = pcall(function()
    for _, e in ipairs(p.list) do
      e[1].windows = windowing.windows(e[2], e[3])
    end
  end)
  job.now_override = saved
  if not ok then
    error(err, 0)
  end
  return s
end

---The full picture as text (kill -USR1).
function M.text(s)
  local out = { ("weir status at processing time %s: %d records in, %d out"):format(
    wm_text(s.processing_time), s.records_in, s.records_out) }
  for _, op in ipairs(s.operators) do
    out[#out + 1] = ("%s [parallelism %d]%s"):format(op.label, op.parallelism,
      op.late_dropped and op.late_dropped > 0 and (", %d late dropped"):format(op.late_dropped)
        or "")
    for _, sub in ipairs(op.subtasks) do
      if sub.channels then
        out[#out + 1] = ("  subtask %d/%d: watermark %s%s"):format(sub.index + 1,
          op.parallelism, wm_text(sub.valve_output), sub.idle and " (idle)" or "")
        for _, c in ipairs(sub.channels) do
          out[#out + 1] = ("    input %d from %s subtask %d/%d: watermark %s, %s%s"):format(
            c.channel, c.from, c.subtask + 1, c.parallelism, wm_text(c.watermark),
            c.active and "active" or "idle",
            c.active and not c.aligned and " (catching up)" or "")
        end
      end
      if sub.emits then
        out[#out + 1] = ("    emits watermark %s%s"):format(wm_text(sub.emits),
          sub.emits_idle and " (idle)" or "")
      end
      if sub.windows then
        out[#out + 1] = ("    %d open window(s), %d element(s)"):format(sub.open_windows,
          sub.elements)
        for i, w in ipairs(sub.windows) do
          if i > MAX_WINDOWS then
            out[#out + 1] = ("      ... and %d more"):format(#sub.windows - MAX_WINDOWS)
            break
          end
          out[#out + 1] = ("      key %s window %s: %d element(s), %s"):format(
            format.value(w.key), tostring(w.window), w.elements, M.waits_text(w))
        end
      end
    end
  end
  kafka_health.text_lines(s.kafka, out)
  if s.alignment then
    alignment.status_lines(s.alignment, out)
  end
  return table.concat(out, "\n") .. "\n"
end

---The lowest watermark over the window operators (or every operator) and its lag.
local function lowest_watermark(job)
  local low = INF
  local nodes = #job.timer_nodes > 0 and job.timer_nodes or job.plan.nodes
  for _, node in ipairs(nodes) do
    for _, inst in ipairs(node.instances or {}) do
      if inst.valve and inst.watermark < low then
        low = inst.watermark
      end
    end
  end
  return low
end

---The --progress line.
function M.progress_line(job, prev)
  local now = job:now()
  local rate = 0
  if prev.time and now > prev.time then
    rate = (job.records_in - prev.records_in) * 1000 / (now - prev.time)
  end
  prev.time, prev.records_in = now, job.records_in
  local open, late = 0, 0
  for _, node in ipairs(job.timer_nodes) do
    late = late + (node.late_dropped or 0)
    for _, inst in ipairs(node.instances) do
      open = open + windowing.stats(node, inst).open_windows
    end
  end
  local low = lowest_watermark(job)
  local wm = "no watermark yet"
  if low > -INF then
    wm = ("watermark %s"):format(wm_text(low))
    if low < INF then
      local lag = now - low
      wm = wm .. (lag >= 0 and " (%s behind)" or " (%s ahead of the clock)"):format(
        duration.human(math.abs(lag)))
    end
  end
  return ("weir: %d in, %d out, %d/s, %s, %d open window(s), %d late dropped, %s%s%s"):format(
    job.records_in, job.out_count[1], rate + 0.5 - (rate + 0.5) % 1, wm, open, late,
    memory.progress_text(), alignment.progress_text(alignment.report(job)),
    kafka_health.progress_text(job))
end

---The stall warning: a window operator subtask whose watermark has not moved for `after` ms
---of processing time while records kept arriving. Once per stall. One subtask (weir.timeflow
---sweeps them every tick).
function M.check_stall(_, node, inst, now, after)
  if inst.stall_wm ~= inst.watermark then
    inst.stall_wm, inst.stall_since, inst.stall_records = inst.watermark, now, inst.records
    inst.stall_warned = false
  elseif not inst.stall_warned and now - inst.stall_since >= after
      and inst.records > inst.stall_records then
    inst.stall_warned = true
    C.weir_out_flush() -- also erases the --progress line
    io.stderr:write(M.stall_text(node, inst, now - inst.stall_since))
  end
end

---Every event-time window subtask's stall check.
function M.check_stalls(job, after)
  local now = job:now()
  for _, node in ipairs(job.timer_nodes) do
    if node.assigner and node.assigner.is_event_time then -- keyed operators have none
      for _, inst in ipairs(node.instances) do
        M.check_stall(job, node, inst, now, after)
      end
    end
  end
end

function M.stall_text(node, inst, ms)
  -- the channel holding the minimum: the lowest watermark among active, caught-up channels
  local hold
  for _, c in ipairs(channels_of(node, inst)) do
    if c.active and c.aligned and (not hold or c.watermark < hold.watermark) then
      hold = c
    end
  end
  local who = "no active input"
  if hold then
    who = ("input %d from %s subtask %d/%d (watermark %s, %s)"):format(hold.channel, hold.from,
      hold.subtask + 1, hold.parallelism, wm_text(hold.watermark),
      hold.active and "active" or "idle")
  end
  return ("weir: warning: %s subtask %d/%d: the watermark has not moved for %ds (still %s) "
    .. "while records keep arriving; it is held back by %s. If that input has gone quiet, "
    .. "with_idleness(...) lets the other inputs drive the watermark, and "
    .. "with_idle_advance(...) lets the clock move it.\n"):format(node.label, inst.index + 1,
    node.parallelism, math.floor(ms / 1000), wm_text(inst.watermark), who)
end

jit.on(M.check_stall) -- per tick, from the stall sweep

return M
