-- weir.timeline: `weir timeline` (run a job as `weir run` would, recording; write -o FILE.svg
-- and --data FILE), the REPL's `:draw --svg FILE`, and the face of the timeline modules: what
-- they give other modules (the recorder, the data, the picture) is reachable from here.
--
-- weir.timeline_record records a started job (wrappers, no hot path change) and turns what it
-- saw into plain data and its --data text; weir.timeline_svg draws that data as an SVG picture.
local record = require("weir.timeline_record")
local svg = require("weir.timeline_svg")

local M = {}

M.new_trace = record.new_trace
M.attach = record.attach
M.save = record.save -- the REPL's :undo: a copy of what a recorder has seen, and back
M.load = record.load
M.snapshot = record.snapshot
M.data_text = record.data_text
M.read_data = record.read_data
M.svg = svg.svg
M.ms_text = svg.ms_text

local function write_file(path, text_)
  local f, err = io.open(path, "wb")
  if not f then
    return nil, err
  end
  local ok, werr = f:write(text_)
  local cok, cerr = f:close()
  if not ok or not cok then
    return nil, ("%s: %s"):format(path, tostring(werr or cerr))
  end
  return true
end
M.write_file = write_file

---The REPL's `:draw --svg FILE`: writes the picture of what rec recorded; returns what to say.
function M.draw_command(rec, arg)
  local path = arg:match("^%-%-svg%s+(%S.-)%s*$")
  if not path then
    return ":draw --svg needs a FILE (:draw --svg timeline.svg)"
  end
  if not rec then
    return "nothing to draw yet: no job has run (:start)"
  end
  local d = record.snapshot(rec)
  local ok, err = write_file(path, svg.svg(d))
  if not ok then
    return (":draw --svg: cannot write %s"):format(err)
  end
  return ("wrote %s: %d record(s), %d fire(s), %d key(s)"):format(path, #d.elements, #d.fires,
    #d.keys)
end

-- weir timeline -----------------------------------------------------------------------------

---Runs plan as `weir run` would, recording; then writes -o FILE.svg and --data FILE.
function M.execute(plan)
  local run = require("weir.run")
  local opts = plan.env.job
  for _, what in ipairs({ { "-o", opts.output }, { "--data", opts.data } }) do
    -- before the job runs: a file that cannot be written is said at once
    if what[2] then
      local f, err = io.open(what[2], "ab")
      if not f then
        run.job_error(("timeline: cannot write %s %s"):format(what[1], err))
      end
      f:close()
    end
  end
  local job = run.new(plan)
  job.trace = record.new_trace()
  local rec, data
  local ok, err = pcall(function()
    job:start()
    rec = record.attach(job)
    job:run_loop()
    job:finish()
  end)
  if rec then
    data = record.snapshot(rec, { script = opts.script, params = opts.params })
  end
  local code = job:close()
  if data then
    -- also after a failure: the picture shows what happened up to it
    if opts.output then
      local wok, werr = write_file(opts.output, svg.svg(data))
      if not wok then
        run.job_error(("timeline: cannot write -o %s"):format(werr))
      end
    end
    if opts.data then
      local wok, werr = write_file(opts.data, record.data_text(data))
      if not wok then
        run.job_error(("timeline: cannot write --data %s"):format(werr))
      end
    end
  end
  if not ok then
    error(err, 0)
  end
  job:check_output(code)
end

return M
