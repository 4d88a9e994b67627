-- weir.sweep: `weir sweep JOB.lua --replay FILE --param NAME=V1,V2,... ...`: the what-if table.
-- Runs the job once per combination of the parameter lists, each as a child process
-- (`weir timeline JOB.lua --replay FILE --param NAME=V ... --data TMP`, stdout and stderr to
-- temporary files), and compares what each run recorded. A child process, not a fresh Lua state
-- in this one: a setting cannot leak into the next through anything the job or weir keeps in
-- the process (the job's globals and required modules, the C runtime's output buffer, signal
-- and memory state), a setting that crashes or fails is reported and does not take the sweep
-- with it, and each run is exactly what `weir run` would do with those parameters.
local param = require("weir.param")
local timeline = require("weir.timeline")

local M = {}

local MAX_SETTINGS = 100

---The path of this weir binary, for the children: /proc/PID/exe (Linux) of this process, which
---stays valid while it waits for them; PID from /proc/self/stat, read by this process itself.
local function self_exe()
  local f = io.open("/proc/self/stat", "r")
  local pid = f and f:read("*n")
  if f then
    f:close()
  end
  if not pid then
    return nil
  end
  return ("/proc/%d/exe"):format(pid)
end

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function read_all(path)
  local f = io.open(path, "rb")
  if not f then
    return ""
  end
  local s = f:read("*a") or ""
  f:close()
  return s
end

local function lines_of(s)
  local out = {}
  for line in s:gmatch("([^\n]*)\n") do
    out[#out + 1] = line
  end
  local tail = s:match("([^\n]+)$")
  if tail then
    out[#out + 1] = tail
  end
  return out
end

-- os.execute's status: LuaJIT gives system()'s raw status (exit code * 256), or, with its
-- Lua 5.2 compatibility, true/nil, "exit", code.
local function exit_code(a, _, c)
  if type(a) == "number" then
    if a >= 256 then
      return math.floor(a / 256)
    end
    return a
  end
  if c then
    return c
  end
  return a and 0 or 1
end

---The parameter lists of the command line: { {name, values}, ... }, or nil and the problem.
function M.axes(list)
  local axes, seen = {}, {}
  for _, arg in ipairs(list) do
    local name, text = param.split(arg)
    if not name then
      return nil, text:gsub("NAME=VALUE %(e%.g%. out_of_orderness=2s%)",
        "NAME=V1,V2,... (e.g. allowed_lateness=0,1s,5s)")
    end
    if seen[name] then
      return nil, ("--param %s: %s is given twice (give its values as one list: %s=A,B)")
        :format(arg, name, name)
    end
    seen[name] = true
    local values = {}
    for v in (text .. ","):gmatch("([^,]*),") do
      if v == "" then
        return nil, ("--param %s: an empty value in the list (values are separated by commas)")
          :format(arg)
      end
      values[#values + 1] = v
    end
    axes[#axes + 1] = { name = name, values = values }
  end
  return axes
end

---Every combination, the first parameter varying slowest: { {name=value...}, label }.
function M.settings(axes)
  local out = { {} }
  for _, axis in ipairs(axes) do
    local next_out = {}
    for _, s in ipairs(out) do
      for _, v in ipairs(axis.values) do
        local c = { unpack(s) }
        c[#c + 1] = axis.name .. "=" .. v
        next_out[#next_out + 1] = c
      end
    end
    out = next_out
  end
  return out
end

-- One setting's run. Returns its record { data, lines, err, code }.
local function run_one(exe, job, setting)
  local data_path, out_path, err_path = os.tmpname(), os.tmpname(), os.tmpname()
  local cmd = { quote(exe), "timeline", quote(job.script), "--replay", quote(job.replay),
                "--data", quote(data_path) }
  if job.parallelism and job.parallelism > 0 then
    cmd[#cmd + 1] = "--parallelism " .. job.parallelism
  end
  if job.max_memory then
    cmd[#cmd + 1] = "--max-memory " .. quote(job.max_memory)
  end
  if job.stall_warning then
    cmd[#cmd + 1] = "--stall-warning " .. quote(job.stall_warning)
  end
  for _, p in ipairs(setting) do
    cmd[#cmd + 1] = "--param " .. quote(p)
  end
  if job.args and #job.args > 0 then
    cmd[#cmd + 1] = "--"
    for _, a in ipairs(job.args) do
      cmd[#cmd + 1] = quote(a)
    end
  end
  local line = table.concat(cmd, " ") .. " </dev/null >" .. quote(out_path) .. " 2>"
    .. quote(err_path)
  io.stdout:flush()
  local code = exit_code(os.execute(line))
  local r = { code = code, lines = lines_of(read_all(out_path)), err = read_all(err_path) }
  if code == 0 then
    local d, why = timeline.read_data(data_path)
    if not d then
      r.code, r.err = 1, r.err .. "weir: sweep: " .. tostring(why) .. "\n"
    end
    r.data = d
  end
  os.remove(data_path)
  os.remove(out_path)
  os.remove(err_path)
  return r
end

-- The figures of one run.
local function figures(d)
  local f = { records_in = d.records_in, late_dropped = d.late_dropped, windows = 0,
              late_fires = 0, first = {} }
  local fired = {}
  for _, x in ipairs(d.fires) do
    local id = x.key .. "\0" .. x.start .. "\0" .. x.stop
    if x.kind == "late" then
      f.late_fires = f.late_fires + 1
    end
    if x.kind ~= "purged" then
      if not fired[id] then
        fired[id] = true
        f.windows = f.windows + 1
      end
      local wid = x.start .. "\0" .. x.stop
      local first = f.first[wid]
      if not first or x.at < first.at then
        f.first[wid] = { start = x.start, stop = x.stop, at = x.at }
      end
    end
  end
  return f
end

-- Lines of b not in a ("+") and of a not in b ("-"), counting repeats.
local function diff(a, b)
  local count = {}
  for _, l in ipairs(a) do
    count[l] = (count[l] or 0) + 1
  end
  local plus, order = {}, {}
  for _, l in ipairs(b) do
    if (count[l] or 0) > 0 then
      count[l] = count[l] - 1
    else
      if not plus[l] then
        order[#order + 1] = { "+", l }
      end
      plus[l] = (plus[l] or 0) + 1
    end
  end
  local minus = {}
  for _, l in ipairs(a) do
    if (count[l] or 0) > 0 and not minus[l] then
      minus[l] = count[l]
      order[#order + 1] = { "-", l }
    end
  end
  local n = 0
  for _, c in pairs(plus) do
    n = n + c
  end
  for _, c in pairs(minus) do
    n = n + c
  end
  for _, e in ipairs(order) do
    e[3] = e[1] == "+" and plus[e[2]] or minus[e[2]]
  end
  return n, order
end

local function table_text(rows, right)
  local widths = {}
  for _, r in ipairs(rows) do
    for i, c in ipairs(r) do
      widths[i] = math.max(widths[i] or 0, #c)
    end
  end
  local out = {}
  for _, r in ipairs(rows) do
    local cells = {}
    for i, c in ipairs(r) do
      local pad = (" "):rep(widths[i] - #c)
      cells[i] = (right[i] and pad .. c or c .. pad)
    end
    out[#out + 1] = (table.concat(cells, "  "):gsub("%s+$", ""))
  end
  return table.concat(out, "\n") .. "\n"
end

local MAX_DIFF_LINES = 10

---weir sweep: returns the exit status (0, 1 a setting failed, 2 usage).
function M.run(job, say)
  local axes, why = M.axes(job.params or {})
  if not axes then
    say(why)
    return 2
  end
  local settings = M.settings(axes)
  if #settings > MAX_SETTINGS then
    say(("sweep: %d settings (the product of the --param lists); at most %d"):format(#settings,
      MAX_SETTINGS))
    return 2
  end
  local exe = self_exe()
  if not exe then
    say("sweep: cannot find the weir binary (/proc/self/exe)")
    return 1
  end
  local runs = {}
  for i, s in ipairs(settings) do
    local r = run_one(exe, job, s)
    r.label = table.concat(s, " ")
    runs[i] = r
    if r.code ~= 0 then
      io.stderr:write(r.err)
      say(("sweep: setting #%d (%s) failed (exit %d)%s"):format(i, r.label, r.code,
        i > 1 and "; the sweep stops there" or ""))
      return r.code == 2 and 2 or 1
    end
    if r.data.stopped then
      -- SIGINT reached the child too: it stopped early (exit 0), so its figures are partial
      say(("sweep: interrupted during setting #%d (%s)"):format(i, r.label))
      return 1
    end
    r.fig = figures(r.data)
  end
  local out = {}
  local function put(s)
    out[#out + 1] = s
  end
  put(("weir sweep: %s on %s, %d setting(s)\n\n"):format(job.script, job.replay, #runs))
  local rows = { { "#", "setting", "records in", "windows fired", "late fires", "late dropped",
                   "output lines", "differ" } }
  local diffs = {}
  for i, r in ipairs(runs) do
    local n, order = 0, {}
    if i > 1 then
      n, order = diff(runs[1].lines, r.lines)
    end
    diffs[i] = order
    rows[#rows + 1] = { "#" .. i, r.label, tostring(r.fig.records_in), tostring(r.fig.windows),
                        tostring(r.fig.late_fires), tostring(r.fig.late_dropped),
                        tostring(#r.lines), i == 1 and "-" or tostring(n) }
  end
  put(table_text(rows, { false, false, true, true, true, true, true, true }))
  -- the first output of each window, in processing time
  local wins, seen = {}, {}
  local clock0 = math.huge
  for _, r in ipairs(runs) do
    for id, w in pairs(r.fig.first) do
      if not seen[id] then
        seen[id] = true
        wins[#wins + 1] = { id = id, start = w.start, stop = w.stop }
      end
    end
    for _, e in ipairs(r.data.elements) do
      clock0 = math.min(clock0, e.at)
    end
  end
  if clock0 == math.huge then
    clock0 = 0
  end
  table.sort(wins, function(a, b)
    if a.start ~= b.start then
      return a.start < b.start
    end
    return a.stop < b.stop
  end)
  if #wins > 0 then
    put(("\nfirst output per window (event time): the processing time of its first fire (any "
      .. "key), from the first record's arrival%s\n\n"):format(
      clock0 ~= 0 and (" (" .. ("%.0f"):format(clock0) .. " ms)") or ""))
    local head = { "window" }
    for i = 1, #runs do
      head[#head + 1] = "#" .. i
    end
    local trows, right = { head }, { false }
    for _, w in ipairs(wins) do
      local row = { ("[%s, %s)"):format(("%.0f"):format(w.start), ("%.0f"):format(w.stop)) }
      local base = runs[1].fig.first[w.id]
      for i, r in ipairs(runs) do
        local f = r.fig.first[w.id]
        local cell = "never"
        if f then
          cell = timeline.ms_text(f.at - clock0)
          if i > 1 and base and f.at ~= base.at then
            cell = cell .. (" (%s%s)"):format(f.at > base.at and "+" or "-",
              timeline.ms_text(math.abs(f.at - base.at)))
          end
        end
        row[#row + 1] = cell
        right[i + 1] = true
      end
      trows[#trows + 1] = row
    end
    put(table_text(trows, right))
  end
  -- the lines that differ
  for i = 2, #runs do
    local order = diffs[i]
    if #order > 0 then
      put(("\noutput of #%d (%s) that differs from #1 (+ only in #%d, - only in #1):\n")
        :format(i, runs[i].label, i))
      for j, e in ipairs(order) do
        if j > MAX_DIFF_LINES then
          put(("  ... %d more\n"):format(#order - MAX_DIFF_LINES))
          break
        end
        put(("  %s %s%s\n"):format(e[1], e[3] > 1 and (e[3] .. "x ") or "", e[2]))
      end
    end
  end
  io.stdout:write(table.concat(out))
  -- what the runs said on stderr (warnings, dropped records), per setting
  for i, r in ipairs(runs) do
    for _, l in ipairs(lines_of(r.err)) do
      io.stderr:write(("[#%d %s] %s\n"):format(i, r.label, l))
    end
  end
  io.stdout:flush()
  return 0
end

return M
