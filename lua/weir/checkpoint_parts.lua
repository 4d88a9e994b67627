-- weir.checkpoint_parts: the parts of a running job that a checkpoint keeps, each a named part
-- of weir.checkpoint's registry (snapshot() -> plain value, restore(value)): the job (the
-- clock, the job counters, late records dropped), every source's position (and a replay
-- file's crc32), every operator subtask's watermark, valve, generator and emitter and a rich
-- function's snapshot_state/restore_state, the rebalance counters, the sinks (write_text
-- lengths, collect values), keyed operators' state and timers by key group (weir.keyed), and
-- the window layer's parts from weir.windowing. A restore at another parallelism redistributes
-- them (Rescale, below). What is restored when, and the checks around it, are
-- weir.checkpoint_job's.
local ffi = require("ffi")
local C = require("weir.ffi")
local checkpoint = require("weir.checkpoint")
local failure = require("weir.failure")
local keyed = require("weir.keyed")
local watermarks = require("weir.watermarks")
local windowing = require("weir.windowing")

local M = {}
local INF = math.huge

local job_error = failure.job_error

---A checkpoint's message on stderr, after what the job printed (weir.checkpoint_job uses it too).
local function say(fmt, ...)
  C.weir_out_flush()
  io.stderr:write("weir: ", fmt:format(...), "\n")
end
M.say = say

local function describe_position(src, pos)
  if pos.replayable == 2 then -- weir.inputlog
    return ("%s continues after line %d (byte %d of its input log)"):format(src.label,
      pos.line, pos.offset)
  elseif src.source == "file" or src.source == "stdin" then
    return ("%s continues after line %d (byte %d)"):format(src.label, pos.line, pos.offset)
  elseif src.source == "replay" then
    return ("%s continues at entry %d"):format(src.label, pos.offset + 1)
  end
  return ("%s continues at record %d"):format(src.label, pos.offset)
end

local clock_box_t = ffi.typeof("double[3]")
local position_t = ffi.typeof("weir_source_position_t")
local POSITION_FIELDS = { "offset", "line", "records", "bytes", "dropped", "check", "replayable",
                          "ended", "skipping" }

local function job_part(ck)
  local job = ck.job
  return {
    what = "the job",
    snapshot = function()
      local clock = clock_box_t()
      C.weir_rt_clock_state(job.rt, clock)
      local late = {}
      for _, node in ipairs(job.plan.nodes) do
        if node.late_dropped then
          late[node.ckpt_uid] = node.late_dropped
        end
      end
      return { clock = { clock[0], clock[1], clock[2] }, records_in = job.records_in,
               out_count = job.out_count[1], unread_errors = job.unread_errors,
               unread_fires = job.unread_fires, late = late }
    end,
    restore = function(v)
      local c = v.clock
      if C.weir_rt_restore_clock(job.rt, c[1], c[2], c[3]) ~= 0 then
        job_error("cannot restore the clock: " .. ffi.string(C.weir_rt_error(job.rt)))
      end
      ck.shift_ms = math.max(0, C.weir_rt_now(job.rt) - c[1]) -- the real clock's downtime
      job.records_in, job.out_count[1] = v.records_in, v.out_count
      job.unread_errors, job.unread_fires = v.unread_errors, v.unread_fires
      for _, node in ipairs(job.plan.nodes) do
        if v.late[node.ckpt_uid] then
          node.late_dropped = v.late[node.ckpt_uid]
        end
      end
    end,
  }
end

local function source_part(ck, node)
  local job = ck.job
  return {
    what = node.label,
    snapshot = function()
      local pos = position_t()
      C.weir_source_position(job.rt, node.src_id, pos)
      local p = {}
      for _, f in ipairs(POSITION_FIELDS) do
        p[f] = tonumber(pos[f])
      end
      return { kind = node.source, path = node.path, position = p, text_crc = node.ckpt_crc }
    end,
    restore = function(v)
      if v.kind ~= node.source or v.path ~= node.path then
        job_error(("%s: the checkpoint's source is %s %s; a restore needs the same source")
          :format(node.label, v.kind, tostring(v.path or "")))
      end
      if v.text_crc and node.ckpt_crc and v.text_crc ~= node.ckpt_crc then
        job_error(("%s: %s changed since the checkpoint (its crc32 differs)"):format(
          node.label, node.path))
      end
      local p = v.position
      if p.replayable == 0 then
        say("%s cannot go back: records it delivered after the checkpoint are lost "
          .. "(--input-log keeps them)", node.label)
        return
      end
      local pos = position_t()
      for _, f in ipairs(POSITION_FIELDS) do
        pos[f] = p[f]
      end
      if C.weir_source_seek(job.rt, node.src_id, pos) ~= 0 then
        job_error(("%s: %s"):format(node.label, ffi.string(C.weir_rt_error(job.rt))))
      end
      ck.restored_sources[#ck.restored_sources + 1] = describe_position(node, p)
    end,
  }
end

local function valve_state(valve, channels)
  local ch = {}
  for c = 0, channels - 1 do
    ch[c + 1] = { C.weir_valve_channel_watermark(valve, c), C.weir_valve_channel_state(valve, c) }
  end
  return { out = C.weir_valve_output(valve), idle = C.weir_valve_is_idle(valve), ch = ch }
end

local function call_hook(node, inst, obj, name, ...)
  local ok, v = xpcall(obj[name], debug.traceback, obj, ...)
  if not ok then
    job_error(("%s, subtask %d/%d: %s: %s"):format(node.label, inst.index + 1, node.parallelism,
      name, tostring(v)))
  end
  return v
end

-- Rescale -----------------------------------------------------------------------------------
-- At another parallelism a new subtask takes over the state of the old subtasks it inherits:
-- in a keyed operator (a hash input) those that owned any of its key groups (as the hash
-- exchange routes them: weir_keygroup_subtask), in any other operator every old subtask. A
-- watermark, a valve channel and an emitter then take the minimum of what they inherit, so
-- that nothing fires earlier than it would have; idleness holds only when all of it was idle.

local function keyed_maxp(node)
  for _, port in ipairs(node.inputs or {}) do
    if port.mode == "hash" then
      return node.max_parallelism or 128
    end
  end
  return nil
end

---The old subtasks (0-based, ascending) whose state subtask j takes over when a node's
---parallelism goes from p to q; maxp: the node's max parallelism when it is keyed.
local function inherited(p, q, j, maxp)
  if p == q then
    return { j }
  end
  local out = {}
  if maxp then
    local seen = {}
    for kg = 0, maxp - 1 do
      if C.weir_keygroup_subtask(kg, maxp, q) == j then
        local i = C.weir_keygroup_subtask(kg, maxp, p)
        if not seen[i] then
          seen[i] = true
          out[#out + 1] = i
        end
      end
    end
    table.sort(out)
  else
    for i = 0, p - 1 do
      out[i + 1] = i
    end
  end
  return out
end
M.inherited = inherited

local function min_of(list, f)
  local m = INF
  for _, x in ipairs(list) do
    m = math.min(m, f(x))
  end
  return #list > 0 and m or -INF
end

---The generator state a subtask gets from the old subtasks' states gs at another parallelism:
---the bounded generator's max timestamp is their minimum; idleness and idle-advance readings
---start fresh (as a fresh Flink generator), so does a custom generator (nil: none restored).
local function merge_generators(gs)
  local kind = gs[1].kind
  if kind == "bounded" then
    return { kind = kind, max_ts = min_of(gs, function(g) return g.max_ts end) }
  elseif kind == "none" then
    return { kind = kind }
  elseif kind == "idle" or kind == "advance" then
    local inners = {}
    for i, g in ipairs(gs) do
      inners[i] = g.inner
    end
    local inner = merge_generators(inners)
    if not inner then
      return nil
    end
    if kind == "idle" then
      return { kind = kind, inner = inner, counter = 0, last_counter = 0, idle_now = false }
    end
    return { kind = kind, inner = inner, base = -INF }
  end
  return nil -- custom
end

-- The valve of new subtask j from the old subtasks olds (their indexes from) at another
-- parallelism of the node or of an upstream node. Channel c of a port stands for upstream
-- subtask c (a forward port: the upstream subtask with the subtask's own index); a new channel
-- takes the minimum watermark of the old channels whose upstream subtasks its upstream subtask
-- inherited, active when any of them was.
local function rescale_valve(node, inst, v, olds, from)
  local valve = inst.valve
  local j = inst.index
  if not v.ports or #v.ports ~= #node.inputs then
    return -- a changed graph: the valve starts fresh
  end
  local outs = {}
  for q, port in ipairs(node.inputs) do
    local old = v.ports[q]
    local up = port.node
    local up_old_p = old.mode == "forward" and v.parallelism or old.channels
    for c = 0, port.channels - 1 do
      local us = inherited(up_old_p, up.parallelism, port.mode == "forward" and j or c,
        keyed_maxp(up))
      local wm, active, any = INF, false, false
      for k, s in ipairs(olds) do
        if s.valve then
          for _, u in ipairs(us) do
            local oc = old.mode == "forward" and (u == from[k] and 0 or nil) or u
            local ch = oc and s.valve.ch[old.offset + oc + 1]
            if ch then
              wm, any = math.min(wm, ch[1]), true
              active = active or ch[2] % 2 == 1
            end
          end
        end
      end
      if any then
        outs[#outs + 1] = { port.offset + c, wm, active }
      end
    end
  end
  local out, idle = INF, true
  for _, s in ipairs(olds) do
    if s.valve then
      out = math.min(out, s.valve.out)
      idle = idle and s.valve.idle == 1
    end
  end
  if out == INF then
    return
  end
  for _, o in ipairs(outs) do
    local state = (o[3] and 1 or 0) + ((o[3] and o[2] >= out) and 2 or 0)
    C.weir_valve_restore(valve, o[1], o[2], state)
  end
  C.weir_valve_restore(valve, -1, out, idle and 1 or 0)
end

-- An operator: per subtask its watermark, valve, generator and emitter (timestamps), a rich
-- function's snapshot_state. Restored one to one at the same parallelism, else as Rescale says;
-- a rich function's restore_state then gets the values of the old subtasks i with
-- i % parallelism == its index, in order (maybe none: {}).
local function operator_part(ck, node)
  return {
    what = node.label,
    snapshot = function()
      local subtasks = {}
      for _, inst in ipairs(node.instances) do
        local st = inst.index
        local s = { watermark = inst.watermark }
        if inst.valve then
          s.valve = valve_state(inst.valve, node.channels)
        end
        if node.gens then
          s.gen = watermarks.snapshot_generator(node.gens[st])
          s.emitter = watermarks.snapshot_emitter(node.emitters[st])
        end
        local obj = inst.obj
        if obj and type(obj.snapshot_state) == "function" then
          s.user = call_hook(node, inst, obj, "snapshot_state")
          s.has_user = true
        end
        subtasks[st + 1] = s
      end
      local ports = {}
      for q, port in ipairs(node.inputs or {}) do
        ports[q] = { mode = port.mode, channels = port.channels, offset = port.offset }
      end
      return { parallelism = node.parallelism, channels = node.channels, ports = ports,
               subtasks = subtasks }
    end,
    restore = function(v)
      local p, q = v.parallelism, node.parallelism
      local same = p == q and v.channels == node.channels
      local maxp = keyed_maxp(node)
      for _, inst in ipairs(node.instances) do
        local st = inst.index
        local from = same and { st } or inherited(p, q, st, maxp)
        local olds = {}
        for k, i in ipairs(from) do
          olds[k] = v.subtasks[i + 1]
        end
        inst.watermark = min_of(olds, function(s) return s.watermark end)
        if inst.valve and same and olds[1].valve then
          for c, ch in ipairs(olds[1].valve.ch) do
            C.weir_valve_restore(inst.valve, c - 1, ch[1], ch[2])
          end
          C.weir_valve_restore(inst.valve, -1, olds[1].valve.out, olds[1].valve.idle)
        elseif inst.valve then
          rescale_valve(node, inst, v, olds, from)
        end
        if node.gens and #olds > 0 and olds[1].gen then
          local gs = {}
          for k, s in ipairs(olds) do
            gs[k] = s.gen
          end
          local g = same and gs[1] or merge_generators(gs)
          if g then
            local ok, err = pcall(watermarks.restore_generator, node.gens[st], g, ck.shift_ms or 0)
            if not ok then
              job_error(("%s: %s"):format(node.label, tostring(err)))
            end
          end
          local idle = true
          for _, s in ipairs(olds) do
            idle = idle and s.emitter.idle
          end
          watermarks.restore_emitter(node.emitters[st], { idle = idle,
            current = min_of(olds, function(s) return s.emitter.current end) })
        end
        local obj = inst.obj
        if obj and type(obj.restore_state) == "function" then
          -- Flink's initializeState: before open(); {own value} at unchanged parallelism
          local values, any = {}, false
          for i = 0, p - 1 do
            local s = v.subtasks[i + 1]
            if s.has_user then
              any = true
              if (same and i == st) or (not same and i % q == st) then
                values[#values + 1] = s.user
              end
            end
          end
          if any then
            call_hook(node, inst, obj, "restore_state", values)
          end
        end
      end
    end,
  }
end

-- Keyed state and timers (weir.keyed's snapshot_groups): one section per key group. A restore
-- waits until open() has made the states (Ck:after_open), then gives each subtask the key
-- groups it owns now. A state the checkpoint has and open() does not make is an error (or,
-- with --allow-non-restored-state, dropped with a warning); so is one of another kind, or one
-- whose TTL was switched on or off (Flink's StateMigrationException).
local function keyed_part(ck, node)
  return {
    what = node.label, keyed = true, raw = true,
    snapshot = function()
      return keyed.snapshot_groups(node, checkpoint.encode)
    end,
    reset = function() -- --verify-checkpoints: empty, then the restore puts back what it kept
      keyed.reset(node)
    end,
    restore = function(groups)
      local function work()
        local skip, seen = {}, {}
        for _, g in pairs(groups) do
          for name, d in pairs(g.states) do
            if not seen[name] then
              seen[name] = true
              local now = node.states[name]
              if not now then
                if not ck.opts.allow_non_restored_state then
                  job_error(("%s: the checkpoint holds its %s '%s', which open() no longer "
                    .. "makes; --allow-non-restored-state drops it"):format(node.label, d.kind,
                    name))
                end
                say("%s: dropping the %s '%s' of the checkpoint: open() no longer makes it",
                  node.label, d.kind, name)
                skip[name] = true
              elseif now.kind ~= d.kind then
                job_error(("%s: the state '%s' is a %s in the checkpoint, a %s now")
                  :format(node.label, name, d.kind, now.kind))
              elseif (now.ttl > 0) ~= (d.ttl > 0) then
                job_error(("%s: the state '%s' has %s in the checkpoint and %s now (switching "
                  .. "a TTL on or off is not compatible)"):format(node.label, name,
                  d.ttl > 0 and "a ttl" or "no ttl", now.ttl > 0 and "one" or "none"))
              end
            end
          end
        end
        for _, inst in ipairs(node.instances) do
          local ok, err = pcall(keyed.restore_groups, node, inst, groups, checkpoint.decode, skip)
          if not ok then
            job_error(("%s, subtask %d/%d: restoring keyed state: %s"):format(node.label,
              inst.index + 1, node.parallelism, tostring(err)))
          end
        end
      end
      if ck.after_open_work then
        ck.after_open_work[#ck.after_open_work + 1] = work -- Job:start: once open() has run
      else
        work()
      end
    end,
  }
end

-- The round-robin counters of a rebalance edge: kept while both sides keep their parallelism;
-- otherwise every upstream subtask starts again at subtask 0, as a fresh start does.
local function rebalance_part(edge)
  return {
    what = ("the rebalance from %s to %s"):format(edge.from.label, edge.to.label),
    snapshot = function()
      local c = { to = edge.to.parallelism }
      for st = 0, edge.from.parallelism - 1 do
        c[st + 1] = edge.counters[st]
      end
      return c
    end,
    restore = function(v)
      if #v == edge.from.parallelism and (v.to or edge.to.parallelism) == edge.to.parallelism
      then
        for st = 0, edge.from.parallelism - 1 do
          edge.counters[st] = v[st + 1]
        end
      end
    end,
  }
end

local function sink_part(ck, node)
  local job = ck.job
  if node.sink == "collect" then
    return {
      what = node.label,
      snapshot = function() return { values = node.values } end,
      restore = function(v)
        for i = #node.values, 1, -1 do
          node.values[i] = nil
        end
        for i, x in ipairs(v.values) do
          node.values[i] = x
        end
      end,
    }
  elseif node.sink == "write_text" then
    return {
      what = node.label,
      snapshot = function()
        local files = {}
        for _, f in ipairs(job.files) do
          if f.node == node then
            local ok, err = f.fh:flush()
            if not ok then
              job_error(("%s: cannot write %s: %s"):format(node.label, f.path, tostring(err)))
            end
            files[#files + 1] = { path = f.path, length = f.fh:seek("cur") }
          end
        end
        if #files == 0 and ck.final_lengths then
          files = ck.final_lengths[node] or {}
        end
        return { files = files }
      end,
      restore = function(v)
        -- done as the files opened (Job:reopen_file); after a rescale to fewer subtasks the
        -- files no subtask opens lose the tail written after the checkpoint too
        local open = {}
        for _, f in ipairs(job.files) do
          open[f.path] = true
        end
        for _, f in ipairs(v.files or {}) do
          if not open[f.path] then
            local rc = C.weir_ckpt_truncate(f.path, f.length)
            if rc ~= 0 then
              job_error(("%s: cannot truncate %s: %s"):format(node.label, f.path,
                ffi.string(C.weir_strerror(rc))))
            end
          end
        end
      end,
    }
  end
  return nil -- print and sink(fn): nothing to keep (at-least-once, docs/API.md)
end

---The registry of the job's parts for the checkpointer ck (weir.checkpoint_job: ck.job, and
---ck.shift_ms, ck.restored_sources, ck.final_lengths that the parts read and write).
function M.registry(ck)
  local job = ck.job
  local reg = checkpoint.registry()
  reg:add("job", job_part(ck))
  for _, node in ipairs(job.plan.nodes) do
    if node.kind == "window" then
      -- the window layer's parts (its own sections, by key group)
      for name, part in pairs(windowing.checkpoint_parts(job, node)) do
        reg:add("window/" .. node.ckpt_uid .. "/" .. name, part)
      end
    end
  end
  for _, node in ipairs(job.plan.sources) do
    if node.source == "replay" then
      local text = checkpoint.read_all(node.path)
      node.ckpt_crc = text and tonumber(C.weir_ckpt_crc32(0, text, #text))
    end
    reg:add("source/" .. node.ckpt_uid, source_part(ck, node))
  end
  for _, node in ipairs(job.plan.nodes) do
    reg:add("op/" .. node.ckpt_uid, operator_part(ck, node))
    local first = node.instances and node.instances[1]
    if first and first.kstate and node.states then
      reg:add("keyed/" .. node.ckpt_uid, keyed_part(ck, node))
    end
    if node.kind == "sink" then
      local part = sink_part(ck, node)
      if part then
        reg:add("sink/" .. node.ckpt_uid, part)
      end
    end
  end
  for _, edge in ipairs(job.rebalance_counters) do
    reg:add(("rebalance/%s/%s"):format(edge.from.ckpt_uid, edge.to.ckpt_uid),
      rebalance_part(edge))
  end
  return reg
end

return M
