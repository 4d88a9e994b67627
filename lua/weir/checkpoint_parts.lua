-- weir.checkpoint_parts: the parts of a running job that a checkpoint keeps, each a named part
-- of weir.checkpoint's registry (snapshot() -> plain value, restore(value)): the job (the
-- clock, the job counters, late records dropped), every source's position (and a replay
-- file's crc32), every operator subtask's watermark, valve, generator and emitter and a rich
-- function's snapshot_state/restore_state, the rebalance counters, the sinks (write_text
-- lengths, collect values), and the window layer's parts from weir.windowing. What is
-- restored when, and the checks around it, are weir.checkpoint_job's.
local ffi = require("ffi")
local C = require("weir.ffi")
local checkpoint = require("weir.checkpoint")
local failure = require("weir.failure")
local watermarks = require("weir.watermarks")
local windowing = require("weir.windowing")

local M = {}

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

-- An operator: per subtask its watermark, valve, generator and emitter (timestamps), a rich
-- function's snapshot_state. Restored one to one (a rescale is not supported yet).
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
      return { parallelism = node.parallelism, channels = node.channels, subtasks = subtasks }
    end,
    restore = function(v)
      if v.parallelism ~= node.parallelism then
        job_error(("%s: parallelism %d in the checkpoint, %d now (restoring at another "
          .. "parallelism is not supported yet)"):format(node.label, v.parallelism,
          node.parallelism))
      end
      if v.channels ~= node.channels then
        job_error(("%s: %s input channels in the checkpoint, %s now (an upstream parallelism "
          .. "changed)"):format(node.label, tostring(v.channels), tostring(node.channels)))
      end
      for _, inst in ipairs(node.instances) do
        local st = inst.index
        local s = v.subtasks[st + 1]
        inst.watermark = s.watermark
        if inst.valve and s.valve then
          for c, ch in ipairs(s.valve.ch) do
            C.weir_valve_restore(inst.valve, c - 1, ch[1], ch[2])
          end
          C.weir_valve_restore(inst.valve, -1, s.valve.out, s.valve.idle)
        end
        if node.gens and s.gen then
          local ok, err = pcall(watermarks.restore_generator, node.gens[st], s.gen,
            ck.shift_ms or 0)
          if not ok then
            job_error(("%s: %s"):format(node.label, tostring(err)))
          end
          watermarks.restore_emitter(node.emitters[st], s.emitter)
        end
        local obj = inst.obj
        if s.has_user and obj and type(obj.restore_state) == "function" then
          -- Flink's initializeState: before open(); {own value} at unchanged parallelism
          call_hook(node, inst, obj, "restore_state", { s.user })
        end
      end
    end,
  }
end

local function rebalance_part(edge)
  return {
    what = ("the rebalance from %s to %s"):format(edge.from.label, edge.to.label),
    snapshot = function()
      local c = {}
      for st = 0, edge.from.parallelism - 1 do
        c[st + 1] = edge.counters[st]
      end
      return c
    end,
    restore = function(v)
      if #v == edge.from.parallelism then
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
      restore = function() end, -- done as the files opened (Job:reopen_file)
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
