-- weir.alignment: watermark alignment, as Flink's WatermarkStrategy.withWatermarkAlignment
-- (FLIP-182 and FLIP-217: SourceCoordinator's announceCombinedWatermark, SourceOperator's
-- checkWatermarkAlignment and checkSplitWatermarkAlignment, SourceReader.pauseOrResumeSplits).
-- A member is an assign_timestamps_and_watermarks operator whose strategy is aligned (it pauses
-- the sources feeding it) or a Kafka source whose `watermarks` strategy is (it pauses itself,
-- and each of its partitions: Flink's splits). At every update (each member's update_interval
-- of processing time, at the periodic tick) the group's minimum is taken over its members'
-- watermarks -- idle members, members without a watermark yet and ended ones (+inf) left out,
-- as Flink's readers report MAX_WATERMARK when idle or finished and nothing before their first
-- watermark -- and each member may go up to minimum + its max_drift: one beyond is paused, one
-- within is resumed. Between updates a member (or partition) whose new watermark passes that
-- bound is paused at once (Flink: updateCurrentEffectiveWatermark, updateCurrentSplitWatermark);
-- only an update resumes. The member holding the minimum is never beyond it, so an update
-- always resumes it: no deadlock. Paused state is derived (no checkpoint part): a restored job
-- starts with nothing paused and the first update pauses again. Set-up and tick code, never
-- traced, except the watermark hooks (M.setup's emit wrappers), which run where watermarks do.
local C = require("weir.ffi")
local duration = require("weir.duration")
local failure = require("weir.failure")

local M = {}
local INF = math.huge

-- A member's watermark for the group: the minimum over its active (not idle, not finished)
-- outputs; returns w and a state: "active", "idle" (every output idle), "none" (an active output
-- has no watermark yet: w is -inf) or "ended" (w is +inf: every input has ended).
local function member_watermark(m)
  local w, any = INF, false
  for i = 1, #m.outputs do
    local o = m.outputs[i]
    local em = o.emitter
    if not em.idle and not (o.part and o.part.released) then
      any = true
      if em.current < w then
        w = em.current
      end
    end
  end
  if not any then
    return INF, "idle"
  elseif w == INF then
    return w, "ended"
  elseif w == -INF then
    return w, "none"
  end
  return w, "active"
end
M.member_watermark = member_watermark

-- The group's minimum over the members that count (+inf when none does).
local function group_minimum(g)
  local low = INF
  for _, m in ipairs(g.members) do
    local w, state = member_watermark(m)
    if state == "active" and w < low then
      low = w
    end
  end
  return low
end

local function now_of(al)
  return al.job.rt ~= nil and al.job:now() or al.job.now_override or 0
end

-- Pauses (on) or resumes a member's inputs: an assigner's sources, a Kafka source as a whole.
local function set_member(al, m, on)
  if m.paused == on then
    return
  end
  local rt = al.job.rt
  m.paused = on
  local now = now_of(al)
  if on then
    m.pauses, m.paused_since = m.pauses + 1, now
  else
    m.paused_ms, m.paused_since = m.paused_ms + (now - m.paused_since), nil
  end
  for _, src in ipairs(m.sources) do
    -- a source feeding a paused member stays paused (weir.alignment refuses a source in two)
    C.weir_source_pause(rt, src.src_id, on and 1 or 0)
  end
end

-- Pauses or resumes one Kafka partition (Flink's split alignment; only with several).
local function set_part(al, m, o, on)
  if o.paused == on then
    return
  end
  o.paused = on
  local now = now_of(al)
  if on then
    o.pauses, o.paused_since = o.pauses + 1, now
  else
    o.paused_ms, o.paused_since = o.paused_ms + (now - o.paused_since), nil
  end
  C.weir_kafka_pause_partition(al.job.rt, m.node.src_id, o.index, on and 1 or 0)
end

-- A member's check against its bound (m.max_allowed): pause beyond it; with resume, also
-- resume within it (an update).
local function check(al, m, resume)
  local bound = m.max_allowed
  local w, state = member_watermark(m)
  local beyond = state == "active" and w > bound
  if beyond then
    set_member(al, m, true)
  elseif resume then
    set_member(al, m, false)
  end
  if m.splits then
    for _, o in ipairs(m.outputs) do
      local em = o.emitter
      local out = not em.idle and not o.part.released and em.current > bound
        and em.current < INF
      if out then
        set_part(al, m, o, true)
      elseif resume then
        set_part(al, m, o, false)
      end
    end
  end
end

-- An update of member m (Flink: the coordinator's announcement): the group's minimum now,
-- and m's bound from it.
local function update(al, m, now)
  local g = m.group
  local low = group_minimum(g)
  g.minimum = low
  m.max_allowed = low + m.max_drift -- +inf when nothing counts: no bound
  m.next_update = now + m.update_interval
  check(al, m, true)
end

-- At every periodic tick (after the generators emitted): the members whose update is due.
local function on_tick(al)
  local now = now_of(al)
  for _, m in ipairs(al.members) do
    if now >= m.next_update then
      update(al, m, now)
    end
  end
end

-- The watermark hook of one output of member m: after the emitter sent w downstream, a
-- member (or partition) now beyond its bound is paused at once. Runs where watermarks are
-- emitted (the tick, or a custom generator's on_event): one comparison when within the bound.
local function hook(al, m, o)
  local em = o.emitter
  local send = em.send_wm
  em.send_wm = function(w)
    send(w)
    if w > m.max_allowed and w < INF then
      check(al, m, false)
    end
  end
end

local function new_member(al, node, strategy, kind)
  local a = strategy.alignment
  local g = al.groups[a.group]
  if not g then
    g = { name = a.group, members = {}, minimum = INF }
    al.groups[a.group] = g
    al.group_list[#al.group_list + 1] = g
  end
  local m = { node = node, kind = kind, label = node.label, group = g, max_drift = a.max_drift,
              update_interval = a.update_interval, max_allowed = INF, next_update = -INF,
              paused = false, pauses = 0, paused_ms = 0, paused_since = nil, outputs = {},
              sources = {}, splits = false }
  g.members[#g.members + 1] = m
  al.members[#al.members + 1] = m
  return m
end

---Sets up the job's alignment (after its sources are open: a Kafka source's partitions are
---known then), or nothing when no strategy is aligned. job.alignment is the result.
function M.setup(job)
  local al = { job = job, groups = {}, group_list = {}, members = {} }
  local owner = {}
  local function claim(m, src)
    local other = owner[src]
    if other then
      failure.job_error(("%s: with_watermark_alignment: %s feeds two aligned inputs, %s "
        .. "(group %s) and %s (group %s); a pause would stop both, so a source belongs to one "
        .. "at most"):format(m.node.strategy.alignment.site, src.label, other.label,
          other.group.name, m.label, m.group.name))
    end
    owner[src] = m
  end
  local assigners = { unpack(job.assigners) }
  table.sort(assigners, function(a, b) return a.id < b.id end) -- in declaration order
  for _, node in ipairs(assigners) do
    if node.strategy.alignment then
      local m = new_member(al, node, node.strategy, "operator")
      for st = 0, node.parallelism - 1 do
        m.outputs[#m.outputs + 1] = { emitter = node.emitters[st], index = st }
      end
      local names = {}
      for _, src in ipairs(job:feeding_sources(node)) do
        m.sources[#m.sources + 1] = src
        names[#names + 1] = src.label
      end
      m.label = ("%s (reading %s)"):format(node.label, table.concat(names, ", "))
      for _, src in ipairs(m.sources) do
        claim(m, src)
      end
      node.align_member = m
    end
  end
  for _, node in ipairs(job.plan.sources) do
    if node.source == "kafka" and node.strategy and node.strategy.alignment then
      local m = new_member(al, node, node.strategy, "kafka")
      claim(m, node)
      m.sources[1] = node
      for i, part in ipairs(node.kafka_parts) do
        m.outputs[i] = { emitter = node.kafka_emitters[i - 1], index = i - 1, part = part,
                         paused = false, pauses = 0, paused_ms = 0, paused_since = nil }
      end
      m.splits = #node.kafka_parts > 1 -- one split: the source's pause is enough (Flink)
      node.align_member = m
    end
  end
  if #al.members == 0 then
    job.alignment = false
    return
  end
  if job.plan.env.auto_watermark_interval <= 0 then
    failure.job_error(("%s: with_watermark_alignment: its updates run on the periodic "
      .. "watermark tick, and auto_watermark_interval is 0 (set it above 0)"):format(
        al.members[1].node.strategy.alignment.site))
  end
  local now = now_of(al)
  for _, m in ipairs(al.members) do
    m.next_update = now + m.update_interval -- Flink's first announcement: one interval in
    for _, o in ipairs(m.outputs) do
      hook(al, m, o)
    end
  end
  local inner = job.sweep_tick
  job.sweep_tick = function()
    inner()
    on_tick(al)
  end
  jit.off(job.sweep_tick)
  job.alignment = al
  return al
end

---A partition that a Kafka source found after the start (partition discovery), index i
---(0-based, its emitter made already): an output of the source's member of its own, at the
---bottom, so it counts for the group once it has a watermark and can be paused by itself, as
---Flink's SourceOperator aligns a split assigned later like the first ones.
function M.add_partition(job, node, i)
  local m = node.align_member
  local al = job.alignment
  if not m or not al then
    return
  end
  local o = { emitter = node.kafka_emitters[i], index = i, part = node.kafka_parts[i + 1],
              paused = false, pauses = 0, paused_ms = 0, paused_since = nil }
  m.outputs[i + 1] = o
  m.splits = #m.outputs > 1
  hook(al, m, o)
end

---Whether a Kafka source's partition i (0-based) is held, itself or with its source.
function M.part_paused(node, i)
  local m = node.align_member
  if not m then
    return false
  end
  return m.paused or (m.outputs[i + 1] and m.outputs[i + 1].paused) or false
end

---For env:status(), :status, kill -USR1 and --progress: every group with its minimum and
---members, each member's state, watermark, bound, pauses and paused time; `paused` lists the
---inputs paused now, each with why. Plain values; reads no C (an ended job's too).
function M.report(job)
  local al = job.alignment
  if not al then
    return nil
  end
  local now = job.rt ~= nil and job:now() or job.now_override or 0
  local r = { groups = {}, paused = {} }
  for _, g in ipairs(al.group_list) do
    local low = group_minimum(g)
    local gr = { name = g.name, minimum = low, members = {} }
    for _, m in ipairs(g.members) do
      local w, state = member_watermark(m)
      local mr = { input = m.label, kind = m.kind, watermark = w, state = state,
                   max_drift = m.max_drift, max_allowed = m.max_allowed, paused = m.paused,
                   pauses = m.pauses,
                   paused_ms = m.paused_ms + (m.paused_since and now - m.paused_since or 0) }
      if m.paused then
        r.paused[#r.paused + 1] = { group = g.name, input = m.label, watermark = w,
          minimum = low, max_drift = m.max_drift, max_allowed = m.max_allowed,
          since = m.paused_since, paused_for = now - m.paused_since }
      end
      if m.kind == "kafka" then
        mr.partitions = {}
        for _, o in ipairs(m.outputs) do
          local p = o.part
          local what = ("%s partition %d (topic %s)"):format(m.label, p.id, p.topic)
          local pr = { topic = p.topic, partition = p.id, watermark = o.emitter.current,
                       idle = o.emitter.idle, released = p.released, paused = o.paused,
                       pauses = o.pauses,
                       paused_ms = o.paused_ms + (o.paused_since and now - o.paused_since or 0) }
          mr.partitions[#mr.partitions + 1] = pr
          if o.paused and not m.paused then
            r.paused[#r.paused + 1] = { group = g.name, input = what,
              watermark = o.emitter.current, minimum = low, max_drift = m.max_drift,
              max_allowed = m.max_allowed, since = o.paused_since,
              paused_for = now - o.paused_since }
          end
        end
      end
      gr.members[#gr.members + 1] = mr
    end
    r.groups[#r.groups + 1] = gr
  end
  return r
end

local function wm_text(w)
  if w == INF then
    return "+inf"
  elseif w == -INF then
    return "-inf"
  end
  return ("%d"):format(w)
end

---The lines kill -USR1 and :status add (weir.status.text), one per paused input.
function M.status_lines(r, out)
  for _, p in ipairs(r.paused) do
    local why
    if p.minimum < INF and p.watermark > p.minimum then
      why = ("is %s ahead of the group's minimum %s"):format(
        duration.human(p.watermark - p.minimum), wm_text(p.minimum))
    else
      why = ("was beyond %s (the group's minimum then + the drift); the next update resumes "
        .. "it"):format(wm_text(p.max_allowed))
    end
    out[#out + 1] = ("paused by watermark alignment: %s (group %s): watermark %s %s (max "
      .. "drift %s), for %s"):format(p.input, p.group, wm_text(p.watermark), why,
        duration.human(p.max_drift), duration.human(p.paused_for))
  end
end

---The --progress line's part, for the first paused input: ", paused by watermark alignment:
---INPUT (group G: watermark W, 3m 10s ahead of the minimum M, max drift 10.0s)" and "and N
---more" (nothing when none is).
function M.progress_text(r)
  if not r or #r.paused == 0 then
    return ""
  end
  local p = r.paused[1]
  local ahead = p.minimum < INF and p.watermark > p.minimum
    and ("%s ahead of the minimum %s"):format(duration.human(p.watermark - p.minimum),
      wm_text(p.minimum))
    or ("beyond %s until the next update"):format(wm_text(p.max_allowed))
  return (", paused by watermark alignment: %s (group %s: watermark %s, %s, max drift %s)%s")
    :format(p.input, p.group, wm_text(p.watermark), ahead, duration.human(p.max_drift),
      #r.paused > 1 and (" and %d more"):format(#r.paused - 1) or "")
end

for _, f in ipairs({ M.setup, M.report, M.status_lines, M.progress_text, M.part_paused,
    on_tick, update, check, set_member, set_part, group_minimum, new_member }) do
  jit.off(f)
end

return M
