-- weir.inputlog: weir run --input-log. A socket_text_stream or stdin source logs every byte it
-- reads into DIR/input-<uid>.log (runtime/inputlog.c), so its position is an offset in that log
-- and a restore replays the bytes read after the checkpoint before live input. This module
-- names the logs, hands them to the sources before the start, lists them for the checkpoint's
-- fsyncs, records each log's offset in the MANIFEST, and after a commit releases the bytes no
-- kept checkpoint needs. weir.checkpoint_job calls it at those four points.
local ffi = require("ffi")
local C = require("weir.ffi")
local checkpoint = require("weir.checkpoint")
local failure = require("weir.failure")
local parts = require("weir.checkpoint_parts")

local M = {}

local LOGGED = { socket = true, stdin = true }
local position_t = ffi.typeof("weir_source_position_t")

---Before the start checkpoint: the log path of every socket and stdin source (ck.dir is set,
---the uids assigned). Returns the list of nodes with a log.
function M.prepare(ck)
  ck.logged = {}
  if not ck.opts.input_log or not ck.dir then
    return ck.logged
  end
  for _, node in ipairs(ck.job.plan.sources) do
    if LOGGED[node.source] then
      node.input_log = ("%s/input-%s.log"):format(ck.dir, node.ckpt_uid)
      ck.logged[#ck.logged + 1] = node
    end
  end
  return ck.logged
end

---After the sources are declared, before the restore and the start.
function M.attach(ck)
  for _, node in ipairs(ck.logged or {}) do
    if C.weir_source_input_log(ck.job.rt, node.src_id, node.input_log) ~= 0 then
      failure.job_error(("%s: --input-log: %s"):format(node.label,
        ffi.string(C.weir_rt_error(ck.job.rt))))
    end
  end
end

local function exists(path)
  local fh = io.open(path, "rb")
  if fh then
    fh:close()
    return true
  end
  return false
end

---The logs a checkpoint fsyncs before its MANIFEST (stdin from a regular file makes none).
function M.sync_paths(ck, list)
  for _, node in ipairs(ck.logged or {}) do
    if exists(node.input_log) then
      list[#list + 1] = node.input_log
    end
  end
  return list
end

---The offset a checkpoint records for node's log (in the MANIFEST's source entry), or nil.
function M.offset(ck, node)
  if not node.input_log or not ck.job.rt or not node.src_id then
    return nil
  end
  local pos = position_t()
  C.weir_source_position(ck.job.rt, node.src_id, pos)
  return pos.replayable == 2 and tonumber(pos.offset) or nil
end

---After a checkpoint committed and the old ones were pruned: each log's bytes before the
---oldest offset a kept checkpoint or savepoint holds are released. A checkpoint without the
---offset (the start, or one taken without --input-log) holds the log back at 0.
function M.release(ck)
  if not ck.logged or #ck.logged == 0 or not ck.job.rt then
    return
  end
  local low = {}
  for _, e in ipairs(checkpoint.list(ck.dir) or {}) do
    if not e.tmp then
      local ms = checkpoint.read_all(e.path .. "/MANIFEST")
      local man = ms and checkpoint.decode_manifest(ms)
      for _, node in ipairs(ck.logged) do
        local off = 0
        for _, s in ipairs(man and man.sources or {}) do
          if s.uid == node.ckpt_uid and s.log_offset then
            off = s.log_offset
          end
        end
        low[node] = math.min(low[node] or math.huge, off)
      end
    end
  end
  for _, node in ipairs(ck.logged) do
    local off = low[node]
    if off and off > 0 and off < math.huge
      and C.weir_source_input_log_release(ck.job.rt, node.src_id, off) ~= 0 then
      -- the log keeps its bytes: it grows, nothing is lost
      parts.say("%s", ffi.string(C.weir_rt_error(ck.job.rt)))
    end
  end
end

return M
