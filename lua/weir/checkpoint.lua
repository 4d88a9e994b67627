-- weir.checkpoint: the checkpoint format and directory. A checkpoint is a directory
-- (chk-<id>, sp-<id> for a savepoint) holding one state file (w0.state: named sections, each
-- a string.buffer-encoded Lua value with its own crc32) and a MANIFEST written last (what the
-- checkpoint is, the job's operators and sources, every file's size and crc32, every section's
-- place). It is built under .tmp-<name> and committed by rename (weir_ckpt_commit: files,
-- then the MANIFEST, then the directory are fsynced). The registry collects the named parts of
-- a job (snapshot() -> value, restore(value)); this module knows nothing of what they hold.
local ffi = require("ffi")
local buffer = require("string.buffer")
local C = require("weir.ffi")

local M = {}

M.FORMAT = 1
M.STATE_FILE = "w0.state"
local HEADER_MAGIC, SECTION_MAGIC, MANIFEST_MAGIC = "WEIRSTAT", "SECT", "WEIRMANI"
local header_t = ffi.typeof("weir_ckpt_header_t")
local section_t = ffi.typeof("weir_ckpt_section_t")
local header_ptr_t = ffi.typeof("const weir_ckpt_header_t *")
local section_ptr_t = ffi.typeof("const weir_ckpt_section_t *")
local u32_ptr_t = ffi.typeof("const uint32_t *")
local u32_box_t = ffi.typeof("uint32_t[1]")
local bytes_t = ffi.typeof("const uint8_t *")
local HEADER_BYTES, SECTION_BYTES = ffi.sizeof(header_t), ffi.sizeof(section_t)
local PAD = "\0\0\0\0\0\0\0\0"
local MAX_DEPTH = 90 -- string.buffer refuses nesting deeper than 100

local function crc(s, n, seed)
  return tonumber(C.weir_ckpt_crc32(seed or 0, s, n or #s))
end

local function padding(n)
  return (8 - n % 8) % 8
end

local function strerror(code)
  return ffi.string(C.weir_strerror(code))
end

-- The codec ---------------------------------------------------------------------------------

---The first part of v that string.buffer would drop silently or refuse: a function, thread,
---userdata or cdata other than a 64-bit integer, a metatable (string.buffer drops it), a
---table reached twice (it would come back as two copies), nesting too deep. Returns the path
---and the problem, or nil.
local function unfit(v, path, seen, depth)
  local t = type(v)
  if t == "nil" or t == "boolean" or t == "number" or t == "string" then
    return nil
  elseif t == "cdata" then
    if ffi.istype("int64_t", v) or ffi.istype("uint64_t", v) then
      return nil
    end
    return path, ("is cdata (%s)"):format(tostring(ffi.typeof(v)))
  elseif t ~= "table" then
    return path, "is a " .. t
  end
  if getmetatable(v) ~= nil then
    return path, "has a metatable (a checkpoint keeps plain tables only)"
  end
  if seen[v] then
    return path, "is the same table as " .. seen[v] .. " (a checkpoint would split it in two)"
  end
  if depth > MAX_DEPTH then
    return path, ("is nested more than %d tables deep"):format(MAX_DEPTH)
  end
  seen[v] = path
  for k, x in pairs(v) do
    local kt = type(k)
    local kp
    if kt == "string" and k:match("^[%a_][%w_]*$") then
      kp = path .. "." .. k
    elseif kt == "string" or kt == "number" then
      kp = ("%s[%s]"):format(path, kt == "string" and ("%q"):format(k) or tostring(k))
    else
      return path, "has a key that is a " .. kt
    end
    local p, why = unfit(x, kp, seen, depth + 1)
    if p then
      return p, why
    end
  end
  return nil
end

---The first part of v (named from path) that a checkpoint cannot keep, and why; nil when v is
---plain (for the parts that check their own values: weir.ckvalue.keep).
function M.unfit(v, path)
  return unfit(v, path or "value", {}, 0)
end

local PLAIN = { number = true, string = true, boolean = true }

---The fast check before encoding: true when v is plain (unfit finds nothing). No strings are
---made, so a big state costs a table walk, not a path per value; unfit runs only after false.
local function plain(v, seen, depth)
  local t = type(v)
  if PLAIN[t] or t == "nil" then
    return true
  elseif t == "cdata" then
    return ffi.istype("int64_t", v) or ffi.istype("uint64_t", v)
  elseif t ~= "table" or getmetatable(v) ~= nil or seen[v] or depth > MAX_DEPTH then
    return false
  end
  seen[v] = true
  for k, x in pairs(v) do
    local kt = type(k)
    if kt ~= "number" and kt ~= "string" then
      return false
    end
    if not PLAIN[type(x)] and not plain(x, seen, depth + 1) then
      return false
    end
  end
  return true
end

---Encodes a plain Lua value (nil, booleans, numbers with NaN, infinities and -0, strings,
---int64 cdata, tables of these without metatables or shared parts). A value outside that
---raises an error naming where, relative to `what`.
function M.encode(v, what)
  if not plain(v, {}, 0) then
    local p, why = unfit(v, what or "value", {}, 0)
    error(("%s %s"):format(p or what or "value", why or "cannot be kept"), 0)
  end
  return buffer.encode(v)
end

---Decodes what encode made; raises on bytes that are not one complete value.
function M.decode(s)
  return buffer.decode(s)
end

-- The writer's collector ---------------------------------------------------------------------

-- In the checkpoint writer (a process forked from the job, weir.checkpoint_job) the collector
-- is stopped: a collection there would walk the whole heap it shares with the job, copying
-- every page it marks (copy on write), to free what the writer drops anyway when it exits. It
-- restarts once the writer's heap reaches twice the job's and 256 MiB more (checked after each
-- part and section), so a checkpoint of a huge state stays bounded.
local gc_ceiling_kb = nil

---Stops the collector of the writer process (called once, right after the fork).
function M.writer_gc()
  gc_ceiling_kb = collectgarbage("count") * 2 + 256 * 1024
  collectgarbage("stop")
end

local function gc_guard()
  if gc_ceiling_kb and collectgarbage("count") > gc_ceiling_kb then
    gc_ceiling_kb = nil
    collectgarbage("restart")
  end
end

-- The registry ------------------------------------------------------------------------------

local Registry = {}
Registry.__index = Registry

---The named parts of one job. Each part is {snapshot = fn() -> value, restore = fn(value),
---keyed = bool, raw = bool, what = text for messages}; a keyed part's snapshot returns {[key
---group] = value} and restore gets the same shape back (the key groups found in the
---checkpoint). raw: the part builds its values fresh and plain (no metatables, nothing
---shared), so encoding skips the check (it costs about 250 ns per table, most of it the
---identity set that finds a shared table).
function M.registry()
  return setmetatable({ parts = {}, by_name = {} }, Registry)
end

function Registry:add(name, part)
  assert(type(name) == "string" and name ~= "", "a part needs a name")
  if self.by_name[name] then
    error(("checkpoint: two parts of the job are named %q (give one a uid)"):format(name), 2)
  end
  part.name = name
  self.parts[#self.parts + 1] = part
  self.by_name[name] = part
end

---The values of the parts that are not keyed, by name ({value}): what the job takes itself
---before the checkpoint writer makes the keyed parts' (the big ones: windows, keyed state)
---from its copy of the job's memory. A part that is not keyed may call user hooks
---(snapshot_state) or flush files, which must happen in the job.
function Registry:snapshot_unkeyed()
  local pre = {}
  for _, part in ipairs(self.parts) do
    if not part.keyed then
      pre[part.name] = { part.snapshot() }
    end
  end
  return pre
end

---Every part's sections: a list of {name, key_group, value}, in registration order; pre (from
---snapshot_unkeyed) holds the values of the parts already taken.
function Registry:snapshot(pre)
  local out = {}
  for _, part in ipairs(self.parts) do
    local taken = pre and pre[part.name]
    local v
    if taken then
      v = taken[1]
    else
      v = part.snapshot()
      gc_guard()
    end
    if part.keyed then
      local groups = {}
      for g in pairs(v) do
        groups[#groups + 1] = g
      end
      table.sort(groups)
      for _, g in ipairs(groups) do
        out[#out + 1] = { name = part.name, key_group = g, value = v[g], raw = part.raw }
      end
    else
      out[#out + 1] = { name = part.name, key_group = -1, value = v, raw = part.raw }
    end
  end
  return out
end

---Hands each part its sections (from read). Returns the names of sections no part took, and
---the names of parts that found no section, each sorted.
function Registry:restore(sections)
  local by_name, names = {}, {}
  for _, s in ipairs(sections) do
    if not by_name[s.name] then
      by_name[s.name] = {}
      names[#names + 1] = s.name
    end
    by_name[s.name][#by_name[s.name] + 1] = s
  end
  local unused, missing = {}, {}
  for _, name in ipairs(names) do
    if not self.by_name[name] then
      unused[#unused + 1] = name
    end
  end
  for _, part in ipairs(self.parts) do
    local got = by_name[part.name]
    if not got then
      missing[#missing + 1] = part.name
    elseif part.keyed then
      local v = {}
      for _, s in ipairs(got) do
        v[s.key_group] = s.value
      end
      part.restore(v)
    else
      part.restore(got[1].value)
    end
  end
  table.sort(unused)
  table.sort(missing)
  return unused, missing
end

-- The state file ----------------------------------------------------------------------------

---A state file holding sections (from Registry:snapshot) for checkpoint id, made in one
---string.buffer: each section's payload is encoded into it in place (its header written before
---and filled in after), never as a string of its own copied in. Returns the buffer and the
---index the MANIFEST keeps: per section its name, key group, offset, bytes and crc.
local function encode_into(id, sections)
  local out = buffer.new()
  local hdr = header_t()
  ffi.copy(hdr.magic, HEADER_MAGIC, 8)
  hdr.format, hdr.sections, hdr.id = M.FORMAT, #sections, id
  hdr.crc = crc(ffi.cast(bytes_t, hdr), 28)
  out:putcdata(hdr, HEADER_BYTES)
  local index = {}
  local sh = section_t()
  for i, s in ipairs(sections) do
    local at = #out
    out:putcdata(sh, SECTION_BYTES) -- its place: filled in once the payload is there
    out:put(s.name, PAD:sub(1, padding(#s.name)))
    local from = #out
    if s.raw then
      out:encode(s.value)
    else
      local what = ("section %s"):format(s.name)
      if s.key_group >= 0 then
        what = ("%s (key group %d)"):format(what, s.key_group)
      end
      out:put(M.encode(s.value, what))
    end
    local len = #out - from
    local base = out:ref() -- after the payload: the buffer may have moved while it grew
    ffi.fill(sh, SECTION_BYTES)
    ffi.copy(sh.magic, SECTION_MAGIC, 4)
    sh.name_len, sh.key_group = #s.name, s.key_group
    sh.payload_crc, sh.payload_len = crc(base + from, len), len
    sh.crc = crc(s.name, #s.name, crc(ffi.cast(bytes_t, sh), 28))
    ffi.copy(base + at, sh, SECTION_BYTES)
    index[i] = { name = s.name, key_group = s.key_group, offset = at, bytes = len,
                 crc = tonumber(sh.payload_crc) }
    out:put(PAD:sub(1, padding(len)))
    gc_guard()
  end
  return out, index
end

---The bytes of a state file holding sections (from Registry:snapshot) for checkpoint id, and
---the index the MANIFEST keeps: per section its name, key group, offset, bytes and crc.
function M.encode_state(id, sections)
  local out, index = encode_into(id, sections)
  local bytes = out:tostring()
  out:free()
  return bytes, index
end

---The sections of a state file's bytes: a list of {name, key_group, value}. On the first
---problem returns nil and what is wrong, naming the section ("section 3 (source/x): payload
---crc mismatch").
function M.decode_state(s, id)
  local n = #s
  if n < HEADER_BYTES then
    return nil, ("truncated: %d bytes, shorter than its %d-byte header"):format(n, HEADER_BYTES)
  end
  local base = ffi.cast(bytes_t, s)
  local hdr = ffi.cast(header_ptr_t, base)
  if ffi.string(hdr.magic, 8) ~= HEADER_MAGIC then
    return nil, "not a weir state file (bad magic)"
  end
  if crc(base, 28) ~= tonumber(hdr.crc) then
    return nil, "header crc mismatch"
  end
  if hdr.format ~= M.FORMAT then
    return nil, ("format %d, this weir reads format %d"):format(hdr.format, M.FORMAT)
  end
  if id and hdr.id ~= id then
    return nil, ("holds checkpoint %d, not %d"):format(hdr.id, id)
  end
  local out, off = {}, HEADER_BYTES
  for i = 1, hdr.sections do
    local where = ("section %d"):format(i)
    if off + SECTION_BYTES > n then
      return nil, ("%s: truncated (the file ends at byte %d)"):format(where, n)
    end
    local sh = ffi.cast(section_ptr_t, base + off)
    if ffi.string(sh.magic, 4) ~= SECTION_MAGIC then
      return nil, ("%s: bad magic at byte %d"):format(where, off)
    end
    local name_len, plen = tonumber(sh.name_len), tonumber(sh.payload_len)
    local name_off = off + SECTION_BYTES
    local pay_off = name_off + name_len + padding(name_len)
    if name_len > n or pay_off > n then
      return nil, ("%s: truncated (the file ends at byte %d)"):format(where, n)
    end
    local name = ffi.string(base + name_off, name_len)
    if crc(base + name_off, name_len, crc(base + off, 28)) ~= tonumber(sh.crc) then
      return nil, ("%s: header crc mismatch"):format(where)
    end
    where = ("section %d (%s%s)"):format(i, name,
      sh.key_group >= 0 and (", key group " .. sh.key_group) or "")
    if plen ~= plen or plen < 0 or pay_off + plen > n then
      return nil, ("%s: truncated (its payload needs %d bytes, the file has %d)"):format(where,
        plen, math.max(0, n - pay_off))
    end
    if crc(base + pay_off, plen) ~= tonumber(sh.payload_crc) then
      return nil, ("%s: payload crc mismatch"):format(where)
    end
    local ok, v = pcall(buffer.decode, ffi.string(base + pay_off, plen))
    if not ok then
      return nil, ("%s: cannot decode: %s"):format(where, tostring(v))
    end
    out[i] = { name = name, key_group = tonumber(sh.key_group), value = v,
               bytes = plen }
    off = pay_off + plen + padding(plen)
    if off > n then
      return nil, ("%s: truncated (its padding is cut at byte %d)"):format(where, n)
    end
  end
  if off ~= n then
    return nil, ("%d bytes after the last section"):format(n - off)
  end
  return out
end

-- The MANIFEST ------------------------------------------------------------------------------

function M.encode_manifest(t)
  local body = M.encode(t, "manifest")
  local head = buffer.new()
  local box = u32_box_t()
  head:put(MANIFEST_MAGIC)
  box[0] = M.FORMAT
  head:putcdata(box, 4)
  box[0] = #body
  head:putcdata(box, 4)
  head:put(body)
  box[0] = crc(body)
  head:putcdata(box, 4)
  return head:tostring()
end

function M.decode_manifest(s)
  if #s < 20 then
    return nil, ("truncated: %d bytes"):format(#s)
  end
  if s:sub(1, 8) ~= MANIFEST_MAGIC then
    return nil, "not a weir MANIFEST (bad magic)"
  end
  local p = ffi.cast(u32_ptr_t, ffi.cast(bytes_t, s) + 8)
  local format, len = tonumber(p[0]), tonumber(p[1])
  if format ~= M.FORMAT then
    return nil, ("format %d, this weir reads format %d"):format(format, M.FORMAT)
  end
  if 16 + len + 4 ~= #s then
    return nil, ("truncated: %d bytes, its header says %d"):format(#s, 16 + len + 4)
  end
  local body = s:sub(17, 16 + len)
  local want = tonumber(ffi.cast(u32_ptr_t, ffi.cast(bytes_t, s) + 16 + len)[0])
  if crc(body) ~= want then
    return nil, "crc mismatch"
  end
  local ok, t = pcall(buffer.decode, body)
  if not ok or type(t) ~= "table" then
    return nil, "cannot decode: " .. tostring(t)
  end
  return t
end

-- The directory -----------------------------------------------------------------------------

local function read_all(path)
  local fh, err = io.open(path, "rb")
  if not fh then
    return nil, err
  end
  local s = fh:read("*a")
  fh:close()
  return s
end
M.read_all = read_all

---The name of checkpoint id of kind ("checkpoint", "final" or "savepoint").
function M.dir_name(id, kind)
  return ("%s-%08d"):format(kind == "savepoint" and "sp" or "chk", id)
end

---The entries of dir: {name, id, path, savepoint, tmp}, sorted by id (then name); nil and the
---error when dir cannot be read.
function M.list(dir)
  local need = C.weir_ckpt_list(dir, nil, 0)
  if need < 0 then
    return nil, strerror(need)
  end
  local buf = ffi.new("char[?]", need + 1)
  local got = C.weir_ckpt_list(dir, buf, need + 1)
  if got < 0 then
    return nil, strerror(got)
  end
  local names = ffi.string(buf, math.min(got, need))
  local out = {}
  for name in names:gmatch("([^%z]+)") do
    local tmp = name:sub(1, 5) == ".tmp-"
    local kind, id = (tmp and name:sub(6) or name):match("^(%a+)%-(%d+)$")
    if id and (kind == "chk" or kind == "sp") then
      out[#out + 1] = { name = name, id = tonumber(id), path = dir .. "/" .. name,
                        savepoint = kind == "sp", tmp = tmp }
    end
  end
  table.sort(out, function(a, b)
    if a.id ~= b.id then return a.id < b.id end
    return a.name < b.name
  end)
  return out
end

---Reads and checks the checkpoint at path: the MANIFEST, each file's size and crc32, each
---section. Returns the manifest and the sections, or nil and what is wrong, naming the file
---("w0.state: section 2 (...): payload crc mismatch", "MANIFEST: missing").
function M.read(path)
  local ms, err = read_all(path .. "/MANIFEST")
  if not ms then
    return nil, "MANIFEST: " .. (err and err:match("No such file") and "missing" or tostring(err))
  end
  local man, why = M.decode_manifest(ms)
  if not man then
    return nil, "MANIFEST: " .. why
  end
  local sections = {}
  for _, f in ipairs(man.files or {}) do
    local s, ferr = read_all(path .. "/" .. f.name)
    if not s then
      return nil, f.name .. ": " .. (ferr and ferr:match("No such file") and "missing"
        or tostring(ferr))
    end
    if #s ~= f.bytes then
      -- say which section the cut or the growth hits, from the file's own framing
      local _, swhy = M.decode_state(s, man.id)
      return nil, ("%s: %d bytes, the MANIFEST says %d%s"):format(f.name, #s, f.bytes,
        swhy and (" (" .. swhy .. ")") or "")
    end
    if crc(s) ~= f.crc then
      local _, swhy = M.decode_state(s, man.id)
      return nil, ("%s: crc mismatch%s"):format(f.name, swhy and (" (" .. swhy .. ")") or "")
    end
    local got, swhy = M.decode_state(s, man.id)
    if not got then
      return nil, f.name .. ": " .. swhy
    end
    for _, x in ipairs(got) do
      sections[#sections + 1] = x
    end
  end
  return man, sections
end

---The newest valid checkpoint or savepoint in dir: its path, manifest and sections, and the
---list of {name, why} of newer ones that were not valid. Nothing valid: nil, that list.
function M.newest(dir)
  local entries, err = M.list(dir)
  if not entries then
    return nil, {}, err
  end
  local bad = {}
  for i = #entries, 1, -1 do
    local e = entries[i]
    if not e.tmp then
      local man, sections = M.read(e.path)
      if man then
        return { path = e.path, name = e.name, manifest = man, sections = sections }, bad
      end
      bad[#bad + 1] = { name = e.name, why = sections }
    end
  end
  return nil, bad
end

---The id the next checkpoint in dir takes: 1 + the highest of any entry (ids never repeat).
function M.next_id(dir)
  local entries = M.list(dir) or {}
  local top = 0
  for _, e in ipairs(entries) do
    top = math.max(top, e.id)
  end
  return top + 1
end

---Writes a checkpoint into dir: the state file of sections, fsyncs the files named in
---sync_paths (write_text sinks), the MANIFEST (manifest with files filled in), then commits.
---Returns the final path, or nil and the failure (the temporary directory is removed). times,
---when given, gets encode_ms (the state file's bytes) and write_ms (files, fsyncs, commit).
function M.write(dir, manifest, sections, sync_paths, times)
  local name = M.dir_name(manifest.id, manifest.kind)
  local tmp, final = dir .. "/.tmp-" .. name, dir .. "/" .. name
  local t0 = C.weir_ckpt_clock_ms()
  local out, index = encode_into(manifest.id, sections) -- a bad value raises, before I/O
  local state, state_len = out:ref() -- written from the buffer: no string of the whole file
  local t1 = C.weir_ckpt_clock_ms()
  if times then
    times.encode_ms = t1 - t0
  end
  local function fail(what, code)
    C.weir_ckpt_remove(tmp)
    return nil, ("%s: %s"):format(what, strerror(code))
  end
  C.weir_ckpt_remove(tmp) -- left by a crash of an earlier run
  local rc = C.weir_out_mkdirs(tmp)
  if rc ~= 0 then
    return fail(tmp, rc)
  end
  rc = C.weir_ckpt_write_file(tmp .. "/" .. M.STATE_FILE, state, state_len)
  if rc ~= 0 then
    return fail(tmp .. "/" .. M.STATE_FILE, rc)
  end
  for _, p in ipairs(sync_paths or {}) do
    rc = C.weir_ckpt_fsync_path(p)
    if rc ~= 0 then
      return fail(p, rc)
    end
  end
  manifest.format = M.FORMAT
  manifest.files = { { name = M.STATE_FILE, bytes = state_len, crc = crc(state, state_len) } }
  manifest.sections = index
  local ms = M.encode_manifest(manifest)
  rc = C.weir_ckpt_write_file(tmp .. "/MANIFEST", ms, #ms)
  if rc ~= 0 then
    return fail(tmp .. "/MANIFEST", rc)
  end
  rc = C.weir_ckpt_commit(tmp, final)
  if rc ~= 0 then
    return fail(final, rc)
  end
  if times then
    times.write_ms = C.weir_ckpt_clock_ms() - t1
  end
  out:free()
  return final, state_len + #ms
end

---Removes checkpoints of dir beyond the newest `kept` ones (savepoints stay); returns the
---names removed.
function M.prune(dir, kept)
  local entries = M.list(dir) or {}
  local chk = {}
  for _, e in ipairs(entries) do
    if not e.savepoint and not e.tmp then
      chk[#chk + 1] = e
    end
  end
  local removed = {}
  for i = 1, #chk - kept do
    if C.weir_ckpt_remove(chk[i].path) == 0 then
      removed[#removed + 1] = chk[i].name
    end
  end
  return removed
end

return M
