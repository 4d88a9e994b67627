-- weir.windowing: the one face of the window layer. It chooses the operator that runs a window
-- node (weir.aggwindow for the common shape, weir.windowop for every other) and is the only
-- module that requires them; the job (weir.run) and the tools (weir.status, weir.explain,
-- weir.repl) read windows only through the functions below, never through an instance's fields.
--
-- The operator interface. An operator module implements:
--   instantiate(job, node)      wires node.push(st, v, ts, key), node.on_watermark(inst, w) and
--                               node.on_processing_time(inst, t, as_if_due) for every subtask
--                               in node.instances, and appends node to job.timer_nodes; with
--                               job.trace (the REPL) it records late records, elements and fires
--                               there (trace below)
--   stats(node, inst)           { open_windows, elements, store_bytes, event_timers,
--                               next_event_timer, processing_timers, next_processing_timer }
--   windows(node, inst)         the open windows: { window, key, elements, waits_for }
--   next_processing_time(node, inst)  the earliest processing-time timer, or +inf
--   key_of(node, inst, kid)     the key of a key id (the error handler's frames carry ids)
-- and keeps inst.watermark (set by the job) and inst.firing (true while a watermark's timers
-- fire, for the error report). The trace (job.trace) is { late = {...}, elements = {key ->
-- timestamps}, keys = {...}, fired = {{key, start, stop, what}} }: the same for both operators.
local aggwindow = require("weir.aggwindow")
local windowop = require("weir.windowop")

local M = {}

---Which operator runs window node n of plan env: "tumbling" or "sliced" (weir.aggwindow) or
---"general" (weir.windowop). From the node's shape alone: no user code runs. A "sliced" node
---whose aggregate's create() returns no number runs on the general operator (M.instantiate).
function M.choose(env, n)
  local a = n.assigner
  if aggwindow.disabled or a.merging or a.global or not a.is_event_time or n.evictor
      or n.trigger.builtin ~= "event_time" then
    return "general"
  end
  if n.fn_kind ~= "reduce" and n.fn_kind ~= "aggregate" then
    return "general"
  end
  if a.size == a.slide then
    return "tumbling"
  end
  if n.fn_kind ~= "aggregate" or not n.user_fn.merge or env.slicing == false
      or a.size % a.slide ~= 0 then
    return "general"
  end
  return "sliced"
end

local OPS = { tumbling = aggwindow, sliced = aggwindow, general = windowop }

---Runs window node on the operator M.choose names; sliced only when create() gives a number
---(slices.c keeps number accumulators), which is known only by calling it, at the start.
function M.instantiate(job, node)
  local how = M.choose(job.plan.env, node)
  if how == "sliced" then
    local ok, acc = pcall(node.user_fn.create)
    if not ok or type(acc) ~= "number" then
      how = "general"
    end
  end
  node.window_op = OPS[how]
  -- Every field a subtask's table gets while records flow exists before they do: a field
  -- added later can grow the table's hash part, and a grown table fails the slot guards of
  -- every trace recorded on it (nexmark q5 ran 1.5x slower when the sliced window's subtask
  -- went from 31 to 32+ fields mid-run). The operator makes its own at instantiate; these are
  -- the job's: firing (set by the operators, read by the error handler) and the stall check's
  -- (weir.status.check_stalls; false compares unequal to any watermark, as nil did).
  for _, inst in ipairs(node.instances) do
    inst.firing = false
    inst.stall_wm, inst.stall_since, inst.stall_records, inst.stall_warned = false, 0, 0, false
  end
  node.window_op.instantiate(job, node)
end

---Whether node runs on a window operator (what status and the REPL list as windows).
function M.runs(node)
  return node.window_op ~= nil
end

---The state and timers of one subtask (the interface's stats).
function M.stats(node, inst)
  return node.window_op.stats(node, inst)
end

---The open windows of one subtask, by end, then key: { window, key, elements, waits_for }.
function M.windows(node, inst)
  local list = node.window_op.windows(node, inst)
  table.sort(list, function(a, b)
    if a.window.stop ~= b.window.stop then
      return a.window.stop < b.window.stop
    end
    return tostring(a.key) < tostring(b.key)
  end)
  return list
end

---The earliest processing-time timer of one subtask, or +inf.
function M.next_processing_time(node, inst)
  return node.window_op.next_processing_time(node, inst)
end

---The key of key id kid in one subtask.
function M.key_of(node, inst, kid)
  return node.window_op.key_of(node, inst, kid)
end

return M
