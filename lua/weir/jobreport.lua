-- weir.jobreport: what a job tells about itself: the --progress line, env:metrics() (per
-- window or keyed operator: open windows, elements, C bytes, timers, late drops; and the memory
-- account), the end-of-job reports on stderr (undeliverable records, late drops with the first
-- one named, failures no one read, what a stop dropped) and the final check of stdout. Job
-- methods, mixed into weir.run's Job.
-- Set-up and report code, run once per job (or per status request): never traced, so that a
-- one-off loop LuaJIT's shared hot counters make look hot cannot abort a trace (weir.codegen).
jit.off(true, true)
local C = require("weir.ffi")
local format = require("weir.format")
local windowing = require("weir.windowing")
local status = require("weir.status")
local memory = require("weir.memory")
local failure = require("weir.failure")

local M = {}
local Job = {}
M.methods = Job

local job_error, out_error_text = failure.job_error, failure.out_error_text

---weir run --progress: a status line at most once a second of processing time.
function Job:show_progress(final)
  local now = self:now()
  local ps = self.progress_state
  local tty = self.plan.env.job.stderr_tty
  if not final and ps.printed and now - ps.printed < 1000 then
    if tty and ps.line and C.weir_out_status_shown() == 0 then
      C.weir_out_status(ps.line, #ps.line) -- output erased it: draw it again below
    end
    return
  end
  ps.printed = now
  local line = status.progress_line(self, ps)
  if tty and not final then
    ps.line = line
    C.weir_out_status(line, #line) -- erased before any later output (runtime/out.c)
  else
    C.weir_out_flush()
    io.stderr:write(tty and "\r\27[K" or "", line, "\n")
  end
end

---Per window operator: open (key, window) slots, buffered elements, C bytes of the store,
---pending timers and dropped late records, summed over its subtasks, keyed by label; and
---memory (weir.memory.figures, or the figures given).
local STATS = { "open_windows", "elements", "store_bytes", "event_timers", "processing_timers" }

function Job:metrics(figures)
  -- the memory account's figures are m.memory and the checkpointer's m.checkpoints (its live
  -- table: the final checkpoint, taken after this, shows there too), outside what pairs()
  -- lists: the operators
  local ck = self.checkpointer
  local m = setmetatable({}, { __index = { memory = figures or memory.figures(),
                                           checkpoints = ck and ck.stats or nil } })
  for _, node in ipairs(self.timer_nodes) do
    local t = { open_windows = 0, elements = 0, store_bytes = 0, event_timers = 0,
                processing_timers = 0, late_dropped = node.late_dropped or 0 }
    for _, inst in ipairs(node.instances) do
      local ws = windowing.stats(node, inst)
      for _, what in ipairs(STATS) do
        t[what] = t[what] + ws[what]
      end
      if ws.state_entries then -- keyed operators (weir.keyed): entries of keyed state
        t.state_entries = (t.state_entries or 0) + ws.state_entries
      end
    end
    m[node.label] = t
  end
  return m
end

function Job:report_drops()
  for _, node in ipairs(self.plan.sources) do
    local dropped = C.weir_source_stat(self.rt, node.src_id, C.WEIR_STAT_DROPPED)
    if dropped > 0 then
      io.stderr:write(("weir: %s: %d record(s) could not be delivered (longer than "
        .. "max_line_bytes)\n"):format(node.label, dropped))
    end
  end
  for _, node in ipairs(self.plan.nodes) do
    if node.late_dropped and node.late_dropped > 0 then
      local f = node.first_late -- wincontext.late
      io.stderr:write(("weir: %s: %d late record(s) dropped (no %s)%s\n")
        :format(node.label, node.late_dropped, node.late_hint or "side_output_late_data", f and (
          "; the first: %s at %s%s, subtask %d/%d, when the watermark was %s"):format(
          format.brief(f.value, 200), format.value(f.ts),
          node.keyed and (", key " .. format.brief(f.key, 200)) or "", f.subtask + 1,
          node.parallelism, format.value(f.watermark)) or ""))
    end
  end
  if self.unread_errors > 0 then
    io.stderr:write(("weir: %d failed record(s) went to an error side output no one reads\n")
      :format(self.unread_errors))
  end
  if self.unread_fires > 0 then
    io.stderr:write(("weir: %d failed window fire(s) went to an error side output no one "
      .. "reads\n"):format(self.unread_fires))
  end
end

---A stop by signal fires nothing (API.md, Signals): say what each window operator dropped.
function Job:report_stop()
  for _, node in ipairs(self.timer_nodes) do
    local m = self.plan.env.final_metrics[node.label]
    if node.kind == "window" and m and m.open_windows > 0 then
      local group = self.plan.env.job.group
      io.stderr:write(("weir: %s: stopped with %d pending window(s) holding %d element(s); "
        .. "%s\n"):format(node.label, m.open_windows, m.elements, group
        and ("in the partitions' last snapshots (group %s: their next owners go on with them)")
          :format(group)
        or "dropped (a stop fires no window)"))
    end
  end
end

---After the final flush: a stdout that failed (the job fails) or stalled during a stop.
function Job:check_output(code)
  local lost = C.weir_out_lost()
  if lost > 0 then
    io.stderr:write(("weir: stop: standard output took no data for 5s; up to %d byte(s) of "
      .. "output dropped\n"):format(lost))
  end
  if code ~= 0 then
    local where = "print"
    for _, node in ipairs(self.plan.nodes) do
      if node.kind == "sink" and node.sink == "print" and node.fd == 1 then
        where = node.label
        break
      end
    end
    job_error(("%s: %s"):format(where, out_error_text(1, code)))
  end
end

jit.on(Job.show_progress) -- per tick with --progress, from traced code

return M
