-- weir.checkpoint_cli: `weir checkpoint list DIR`, `inspect PATH` and `verify PATH`. Reads
-- through weir.checkpoint only; exit status 0 valid, 1 corrupt or unreadable, 2 usage.
local checkpoint = require("weir.checkpoint")

local M = {}

local function out(fmt, ...)
  io.stdout:write(fmt:format(...), "\n")
end

local function fail(fmt, ...)
  io.stdout:flush()
  io.stderr:write("weir: ", fmt:format(...), "\n")
  return 1
end

local function size(n)
  if n >= 1048576 then
    return ("%.1f MiB"):format(n / 1048576)
  elseif n >= 1024 then
    return ("%.1f KiB"):format(n / 1024)
  end
  return ("%d B"):format(n)
end

local function total_bytes(man)
  local n = 0
  for _, f in ipairs(man.files or {}) do
    n = n + f.bytes
  end
  return n
end

---One line per entry of DIR, oldest first: name, kind, whether it is valid (and why not).
local function list(dir)
  local entries, err = checkpoint.list(dir)
  if not entries then
    return fail("checkpoint list %s: %s", dir, err)
  end
  if #entries == 0 then
    out("%s holds no checkpoints", dir)
    return 0
  end
  for _, e in ipairs(entries) do
    if e.tmp then
      out("%-22s in progress or left by a crash (removed by the next run)", e.name)
    else
      local man, why = checkpoint.read(e.path)
      if man then
        out("%-22s %-10s %s%s", e.name, man.kind, size(total_bytes(man)),
          man.finished and ", finished" or "")
      else
        out("%-22s corrupt: %s", e.name, why)
      end
    end
  end
  return 0
end

local function show_value(v)
  return require("weir.format").value(v)
end

---What a checkpoint holds: kind, job, sources and their positions, operators, sections.
local function inspect(path)
  local man, sections = checkpoint.read(path)
  if not man then
    return fail("checkpoint inspect %s: corrupt: %s", path, sections)
  end
  out("%s: %s %d%s, format %d, weir %s, %s", path, man.kind, man.id,
    man.finished and " (finished)" or "", man.format, tostring(man.weir),
    size(total_bytes(man)))
  out("job: %s (%s)", tostring(man.job and man.job.script), tostring(man.job and man.job.name))
  local by_name = {}
  for _, s in ipairs(sections) do
    by_name[s.name] = s
  end
  out("sources:")
  for _, src in ipairs(man.sources or {}) do
    local s = by_name["source/" .. src.uid]
    local p = s and s.value.position
    local where = "?"
    if p then
      local how = ""
      if p.replayable == 0 then
        how = ", not replayable (what it read after this checkpoint is lost)"
      elseif p.replayable == 2 then
        how = ", in its input log (--input-log)"
      end
      where = ("offset %d, line %d, %d records%s%s"):format(p.offset, p.line, p.records,
        p.ended == 1 and ", ended" or "", how)
    end
    out("  %s [%s]: %s", src.label, src.uid, where)
  end
  out("operators:")
  local winckpt = require("weir.winckpt")
  for _, op in ipairs(man.operators or {}) do
    out("  %s [%s]: %s, parallelism %d", op.label, op.uid, op.kind, op.parallelism)
    -- window state: windows and timers, and the key groups they are in
    local w, t, sl, lo, hi, n = 0, 0, 0, math.huge, -math.huge, 0
    for _, s in ipairs(sections) do
      if s.name == "window/" .. op.uid .. "/state" then
        local sw, st, ss = winckpt.counts(s.value)
        w, t, sl, n = w + sw, t + st, sl + ss, n + 1
        lo, hi = math.min(lo, s.key_group), math.max(hi, s.key_group)
      end
    end
    if n > 0 then
      out("    %d %s, %d timers, in %d key group%s%s", sl > 0 and sl or w,
        sl > 0 and "slices" or "windows", t, n, n == 1 and "" or "s",
        lo >= 0 and (" (%d..%d)"):format(lo, hi) or "")
    end
  end
  out("sections:")
  for i, s in ipairs(sections) do
    local kg = s.key_group >= 0 and (", key group " .. s.key_group) or ""
    local v = s.value
    local brief = ""
    if s.name:match("^op/") and v.subtasks then
      local wms = {}
      for _, st in ipairs(v.subtasks) do
        wms[#wms + 1] = show_value(st.watermark)
      end
      brief = " watermarks " .. table.concat(wms, ", ")
    elseif s.name:match("^sink/") and v.files then
      local fs = {}
      for _, f in ipairs(v.files) do
        fs[#fs + 1] = ("%s: %d bytes committed"):format(f.path, f.length)
      end
      brief = " " .. table.concat(fs, "; ")
    elseif s.name:match("^sink/") and v.values then
      brief = (" %d values"):format(#v.values)
    elseif s.name:match("^keyed/") and v.entries then
      local ok, ks = pcall(checkpoint.decode, v.keys)
      brief = (" %d keys, %d state entries, %d timers"):format(ok and #ks or 0, #v.entries,
        #v.timers)
    end
    out("  %d. %s%s: %s%s", i, s.name, kg, size(s.bytes), brief)
  end
  return 0
end

local function verify(path)
  local man, sections = checkpoint.read(path)
  if not man then
    return fail("checkpoint verify %s: corrupt: %s", path, sections)
  end
  out("%s: valid (%s %d, %d sections, %s)", path, man.kind, man.id, #sections,
    size(total_bytes(man)))
  return 0
end

---@return integer exit status
function M.run(sub, path)
  if sub == "list" then
    return list(path)
  elseif sub == "inspect" then
    return inspect(path)
  elseif sub == "verify" then
    return verify(path)
  end
  return fail("checkpoint: unknown command %s", tostring(sub))
end

return M
