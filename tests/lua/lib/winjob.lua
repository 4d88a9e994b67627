-- lib/winjob: the shared fixtures of the window specs (run from tests/lua: require("lib.winjob")).
-- Records are {key, ts, ...} and {wm = W} marks: the punctuated generator emits W at a mark and
-- the marks are filtered out before the window, so each spec states exactly which watermarks
-- the operator saw.
local weir = require("weir")
local windowing = require("weir.windowing")
local aggwindow = require("weir.aggwindow")

local M = {}

---Watermarks from the records: {wm = W} emits W; timestamps are e[2] (0 for a mark).
M.punctuated = weir.watermarks.custom{
  on_event = function(_, e, _, out)
    if e.wm then out:emit_watermark(e.wm) end
  end,
}:with_timestamp_assigner(function(e) return e[2] or 0 end)

---An aggregate summing e[3] into a number (so sliced sliding windows can run it).
M.count_sum = {
  create = function() return 0 end,
  add = function(e, acc) return acc + e[3] end,
  result = function(acc) return acc end,
  merge = function(a, b) return a + b end,
}

---A process function that emits {key, window, "ts ts ..."} (the elements' e[2]).
function M.show(key, ctx, elements, out)
  local vals = {}
  for i, e in ipairs(elements) do vals[i] = e[2] end
  out({ key, tostring(ctx:window()), table.concat(vals, " ") })
end

-- Keys of both kinds the fast operator has: whole numbers >= 0 are their own ids, others
-- (strings, negative or fractional numbers) are interned.
M.RANDOM_KEYS = { "a", "b", 0, 7, -3, 2.5 }

---Random records: keys from keys (M.RANDOM_KEYS), timestamps drifting upwards with disorder,
---values 1-9, and non-decreasing watermarks now and then.
function M.random_records(n, keys)
  keys = keys or M.RANDOM_KEYS
  local out, t, wm = {}, 0, -1
  for _ = 1, n do
    t = t + math.random(0, 4)
    if math.random() < 0.2 then
      wm = math.max(wm, t - math.random(0, 25))
      out[#out + 1] = { wm = wm }
    end
    local back = math.random() < 0.15 and math.random(0, 90) or math.random(0, 30)
    local ts = math.max(0, t - back)
    out[#out + 1] = { keys[math.random(1, #keys)], ts, math.random(1, 9) }
  end
  return out
end

---Runs records through key_by(e[1]) + window(assigner) + configure(windowed) (default: process
---with M.show) and returns what the window function emitted, the late side output, and env.
---opts: env (weir.env options), lateness, trigger, evictor, fast (false: the general operator
---even for the fast operator's shapes), each(e, env) (called with each record before the
---timestamps), finish(result) (before execute), values(e) and key(v) (the window's elements
---are values(e), keyed by key(v), instead of the records keyed by e[1]).
function M.run(records, assigner, configure, opts)
  opts = opts or {}
  local env = weir.env(opts.env)
  local late = weir.output_tag("late")
  local s = env:from_collection(records)
  if opts.each then
    s = s:map(function(e)
      opts.each(e, env)
      return e
    end)
  end
  local w = s:assign_timestamps_and_watermarks(M.punctuated)
    :filter(function(e) return e.wm == nil end)
  if opts.values then -- the window's elements: opts.values(e), keyed by opts.key
    w = w:map(opts.values):key_by(opts.key)
  else
    w = w:key_by(function(e) return e[1] end)
  end
  w = w:window(assigner)
  if opts.trigger then
    w = w:trigger(opts.trigger)
  end
  if opts.lateness then
    w = w:allowed_lateness(opts.lateness)
  end
  if opts.evictor then
    w = w:evictor(opts.evictor)
  end
  w = w:side_output_late_data(late)
  local r = (configure or function(x) return x:process(M.show) end)(w)
  local got, lates = r:collect(), r:get_side_output(late):collect()
  if opts.finish then
    opts.finish(r)
  end
  aggwindow.disabled = opts.fast == false
  local ok, err = pcall(env.execute, env)
  aggwindow.disabled = false
  if not ok then
    error(err, 0)
  end
  return got:values(), lates:values(), env
end

---Watches the window nodes the next jobs instantiate: returns a table whose nodes[i] is
---{ job, node } in instantiation order; call its stop() to stop watching. With trace, the
---jobs keep the REPL's trace (job.trace: late records, elements, fires).
function M.watch(trace)
  local instantiate = windowing.instantiate
  local w = { nodes = {} }
  windowing.instantiate = function(job, node)
    if trace and not job.trace then
      job.trace = { late = {}, elements = {}, keys = {}, fired = {} }
    end
    instantiate(job, node)
    w.nodes[#w.nodes + 1] = { job = job, node = node }
  end
  function w.stop()
    windowing.instantiate = instantiate
  end
  return w
end

return M
