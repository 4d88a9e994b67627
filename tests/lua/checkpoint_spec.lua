-- Specs for weir.checkpoint: the codec, the registry, the state file and MANIFEST framing,
-- the directory (write, read, list, newest, prune), and item 7(d): a truncated, bit-flipped or
-- missing file is refused with its name and the section it hits.
local ffi = require("ffi")
local spec = require("spec")
local tmpdir = require("lib.ckjob").tmpdir
local ckpt = require("weir.checkpoint")
local it, eq, raises = spec.it, spec.eq, spec.raises

local function write(path, s)
  local fh = assert(io.open(path, "wb"))
  fh:write(s)
  fh:close()
end

local function contains(s, frag)
  if not tostring(s):find(frag, 1, true) then
    error(("expected %q in %q"):format(frag, tostring(s)), 2)
  end
end

it("round-trips plain values exactly: NaN, infinities, -0, int64, nesting", function()
  local v = { 1.5, -0.0, math.huge, -math.huge, "a\0b", true, { x = { y = { 1 } } },
              big = 2 ^ 53, i = 12345678901234LL }
  local back = ckpt.decode(ckpt.encode(v))
  eq(back[1], 1.5)
  eq(1 / back[2], -math.huge)
  eq(back[3], math.huge)
  eq(back[5], "a\0b")
  eq(back[7].x.y[1], 1)
  eq(back.big, 2 ^ 53)
  eq(tostring(back.i), "12345678901234LL")
  local nan = ckpt.decode(ckpt.encode(0 / 0))
  eq(nan ~= nan, true)
end)

it("refuses what string.buffer would drop or split, naming the path", function()
  raises(function() ckpt.encode({ a = { f = print } }, "state") end, "state.a.f is a function")
  raises(function() ckpt.encode({ setmetatable({}, {}) }, "s") end, "s[1] has a metatable")
  local t = {}
  raises(function() ckpt.encode({ t, t }, "s") end, "s[2] is the same table as s[1]")
  raises(function() ckpt.encode({ [{}] = 1 }, "s") end, "has a key that is a table")
  raises(function() ckpt.encode(ffi.new("int[1]"), "s") end, "s is cdata")
  local deep = {}
  local cur = deep
  for _ = 1, 95 do
    cur.n = {}
    cur = cur.n
  end
  raises(function() ckpt.encode(deep, "s") end, "nested more than 90 tables deep")
end)

it("keeps user values as they are when it can (weir.ckvalue.keep), else names what is wrong",
  function()
  local ckvalue = require("weir.ckvalue")
  local json = require("weir.json")
  local shared = { 1, 2 }
  local v = { a = { b = { "x", true, 2 ^ 60 } }, s1 = shared, s2 = shared, n = 7LL }
  eq(ckvalue.keep(v, "contents") == v, true, "a plain table is kept itself, not copied")
  -- as a raw part is written (the part checked its values itself)
  local back = ckpt.decode(require("string.buffer").encode(ckvalue.keep(v, "contents")))
  eq(back.s1, { 1, 2 })
  eq(back.s2, { 1, 2 }, "a table in two places is written in each, as a copy would be")
  eq(ckvalue.keep(3, "x"), 3)
  eq(ckvalue.keep("s", "x"), "s")
  local with_null = { 1, json.null }
  local kept = ckvalue.keep(with_null, "contents")
  eq(kept ~= with_null, true, "json.null inside: a copy with a marker")
  eq(ckvalue.thaw(ckpt.decode(ckpt.encode(kept)))[2] == json.null, true, "json.null again")
  local function wrong(x, path, want)
    local got, p, why = ckvalue.keep(x, "contents")
    eq(got, nil)
    eq(p .. " " .. why, path .. " " .. want)
  end
  wrong({ f = print }, "contents.f", "is a function")
  wrong({ { setmetatable({}, {}) } }, "contents[1][1]", "has a metatable (a checkpoint keeps "
    .. "plain tables only)")
  wrong(ffi.new("int[1]"), "contents", "is cdata (ctype<int [1]>)")
  local cyc = {}
  cyc.me = cyc
  local got, p = ckvalue.keep(cyc, "contents")
  eq(got, nil, "a cycle is refused")
  eq(p ~= nil, true)
end)

it("hands each part its sections, keyed ones by key group, and names the leftovers", function()
  local reg = ckpt.registry()
  local got = {}
  reg:add("a", { snapshot = function() return { n = 1 } end,
                 restore = function(v) got.a = v end })
  reg:add("w", { keyed = true, snapshot = function() return { [7] = "x", [3] = "y" } end,
                 restore = function(v) got.w = v end })
  reg:add("new", { snapshot = function() return 0 end, restore = function() got.new = 1 end })
  raises(function() reg:add("a", {}) end, 'two parts of the job are named "a"')
  local sections = reg:snapshot()
  eq(#sections, 4)
  eq(sections[2].key_group, 3) -- key groups in order
  -- through the file format and back
  local bytes = ckpt.encode_state(1, sections)
  local back = assert(ckpt.decode_state(bytes, 1))
  table.remove(back, 4) -- "new" was not in the checkpoint
  back[#back + 1] = { name = "gone", key_group = -1, value = 1 }
  local unused, missing = reg:restore(back)
  eq(got.a, { n = 1 })
  eq(got.w[3], "y")
  eq(got.w[7], "x")
  eq(got.new, nil)
  eq(unused, { "gone" })
  eq(missing, { "new" })
end)

local function sample(id)
  return { id = id, kind = "checkpoint", job = { script = "job.lua" } },
    { { name = "source/lines", key_group = -1, value = { offset = 120, line = 10 } },
      { name = "window/counts", key_group = 5, value = { ["a"] = { 1, 2 } } } }
end

it("encodes a raw part's values without the check, the same bytes otherwise", function()
  local reg = ckpt.registry()
  reg:add("r", { raw = true, snapshot = function() return { 1, { 2 } } end, restore = print })
  local sections = reg:snapshot()
  eq(sections[1].raw, true)
  local back = assert(ckpt.decode_state((ckpt.encode_state(1, sections)), 1))
  eq(back[1].value, { 1, { 2 } })
end)

it("writes a checkpoint directory that reads back whole", function()
  local dir = tmpdir()
  local man, sections = sample(1)
  local path = assert(ckpt.write(dir, man, sections))
  eq(path, dir .. "/chk-00000001")
  local m2, s2 = ckpt.read(path)
  assert(m2, s2)
  eq(m2.id, 1)
  eq(m2.files[1].name, "w0.state")
  eq(m2.sections[2].key_group, 5)
  eq(s2[1].value.offset, 120)
  eq(s2[2].value.a[2], 2)
  eq(ckpt.next_id(dir), 2)
  -- the file is written from the encoding buffer: its bytes are encode_state's, and the
  -- MANIFEST's index (offsets, sizes, crcs) is the one encode_state gives
  local fh = assert(io.open(path .. "/w0.state", "rb"))
  local bytes = fh:read("*a")
  fh:close()
  local want, index = ckpt.encode_state(1, sections)
  eq(bytes == want, true)
  eq(#bytes, m2.files[1].bytes)
  eq(m2.sections, index)
  os.execute("rm -rf " .. dir)
end)

it("frames sections of every payload size: each padded to 8, its offset and crc exact",
  function()
  local sections = {}
  for n = 0, 9 do -- names and payloads of every length mod 8
    sections[#sections + 1] = { name = ("p"):rep(n + 1), key_group = n - 1,
                                value = ("x"):rep(n * 37), raw = n % 2 == 0 }
  end
  local bytes, index = ckpt.encode_state(4, sections)
  eq(#bytes % 8, 0)
  local back = assert(ckpt.decode_state(bytes, 4))
  for i, s in ipairs(sections) do
    eq(back[i].name, s.name)
    eq(back[i].key_group, s.key_group)
    eq(back[i].value, s.value)
    eq(index[i].offset % 8, 0)
    local payload = bytes:sub(index[i].offset + 33 + #s.name + (8 - #s.name % 8) % 8)
      :sub(1, index[i].bytes)
    eq(index[i].crc, tonumber(ffi.C.weir_ckpt_crc32(0, payload, #payload)))
  end
end)

it("keeps the newest checkpoints, never a savepoint, and never reuses an id", function()
  local dir = tmpdir()
  for id = 1, 5 do
    local man, sections = sample(id)
    if id == 2 then
      man.kind = "savepoint"
    end
    assert(ckpt.write(dir, man, sections))
  end
  eq(ckpt.prune(dir, 2), { "chk-00000001", "chk-00000003" })
  local names = {}
  for _, e in ipairs(ckpt.list(dir)) do
    names[#names + 1] = e.name
  end
  eq(names, { "sp-00000002", "chk-00000004", "chk-00000005" })
  os.execute("mkdir " .. dir .. "/.tmp-chk-00000009")
  eq(ckpt.next_id(dir), 10)
  os.execute("rm -rf " .. dir)
end)

-- item 7(d): every kind of damage is refused, named, and the previous checkpoint is used
local function damaged(how)
  local dir = tmpdir()
  for id = 1, 2 do
    local man, sections = sample(id)
    assert(ckpt.write(dir, man, sections))
  end
  local p = dir .. "/chk-00000002"
  how(p)
  local man, why = ckpt.read(p)
  eq(man, nil)
  local newest, bad = ckpt.newest(dir)
  eq(newest.name, "chk-00000001")
  eq(bad[1].name, "chk-00000002")
  os.execute("rm -rf " .. dir)
  return why
end

local function flip(path, at)
  local s = ckpt.read_all(path)
  local b = s:byte(at)
  write(path, s:sub(1, at - 1) .. string.char(bit.bxor(b, 16)) .. s:sub(at + 1))
end

it("refuses a truncated state file, naming the file and the section cut", function()
  local why = damaged(function(p)
    local s = ckpt.read_all(p .. "/w0.state")
    write(p .. "/w0.state", s:sub(1, #s - 9))
  end)
  contains(why, "w0.state: ")
  contains(why, "section 2 (window/counts, key group 5): truncated")
end)

it("refuses a bit flip in a payload, naming the section", function()
  local why = damaged(function(p)
    local s = ckpt.read_all(p .. "/w0.state")
    flip(p .. "/w0.state", #s - 10)
  end)
  contains(why, "w0.state: crc mismatch")
  contains(why, "section 2 (window/counts, key group 5): payload crc mismatch")
end)

it("refuses a bit flip in a section header and in the file header", function()
  contains(damaged(function(p) flip(p .. "/w0.state", 33 + 8) end),
    "section 1: header crc mismatch")
  contains(damaged(function(p) flip(p .. "/w0.state", 10) end), "header crc mismatch")
end)

it("refuses a missing or damaged MANIFEST and a missing state file", function()
  contains(damaged(function(p) os.remove(p .. "/MANIFEST") end), "MANIFEST: missing")
  contains(damaged(function(p) os.remove(p .. "/w0.state") end), "w0.state: missing")
  contains(damaged(function(p) flip(p .. "/MANIFEST", 30) end), "MANIFEST: crc mismatch")
  contains(damaged(function(p)
    local s = ckpt.read_all(p .. "/MANIFEST")
    write(p .. "/MANIFEST", s:sub(1, 40))
  end), "MANIFEST: truncated")
end)

it("finds nothing valid when every checkpoint is damaged", function()
  local dir = tmpdir()
  local man, sections = sample(1)
  assert(ckpt.write(dir, man, sections))
  os.remove(dir .. "/chk-00000001/w0.state")
  local newest, bad = ckpt.newest(dir)
  eq(newest, nil)
  eq(bad[1].why, "w0.state: missing")
  os.execute("rm -rf " .. dir)
end)

-- item 7(d), as a matrix (Flink's corruption tests in spirit): truncations at many offsets of
-- both files, 1, 2 and 8 flipped bits at many positions, a zeroed 4 KiB block: none is ever
-- accepted, every refusal names the file, and one that hits a section names the section too
it("accepts no truncation, bit flip or zeroed block of either file", function()
  local dir = tmpdir()
  local man, sections = sample(1)
  sections[#sections + 1] = { name = "big", key_group = -1,
                              value = { string.rep("x", 6000), list = { 1, 2, 3 } } }
  local path = assert(ckpt.write(dir, man, sections))
  local files = { "w0.state", "MANIFEST" }
  local good = {}
  for _, f in ipairs(files) do
    good[f] = ckpt.read_all(path .. "/" .. f)
  end
  local x = 99
  local function rnd(m)
    x = (x * 1103515245 + 12345) % 2147483648
    return x % m
  end
  local tried, named_section = 0, 0
  local function try(f, bytes, what)
    write(path .. "/" .. f, bytes)
    local m, why = ckpt.read(path)
    write(path .. "/" .. f, good[f])
    tried = tried + 1
    if m ~= nil then
      error(("%s of %s was accepted"):format(what, f), 2)
    end
    contains(why, f .. ": ")
    if why:find("section %d+ %(") then
      named_section = named_section + 1
    end
  end
  for _, f in ipairs(files) do
    local s = good[f]
    for _ = 1, 20 do
      local at = rnd(#s)
      try(f, s:sub(1, at), ("a cut at byte %d"):format(at))
    end
    for _, nbits in ipairs({ 1, 2, 8 }) do
      for _ = 1, 50 do
        local t = { s:byte(1, -1) }
        for _ = 1, nbits do
          local at = 1 + rnd(#s)
          t[at] = bit.bxor(t[at], bit.lshift(1, rnd(8)))
        end
        local bytes = string.char(unpack(t))
        if bytes ~= s then -- two flips of the same bit undo each other
          try(f, bytes, ("%d flipped bits"):format(nbits))
        end
      end
    end
    if #s > 4096 then
      try(f, s:sub(1, 4096) .. string.rep("\0", math.min(4096, #s - 4096)) .. s:sub(8193),
        "a zeroed 4 KiB block")
    end
  end
  assert(tried > 300, tried)
  assert(named_section > 0, "no refusal named its section")
  assert(ckpt.read(path), "the undamaged checkpoint reads back")
  os.execute("rm -rf " .. dir)
end)

it("refuses a MANIFEST of a newer format and skips a temporary directory", function()
  local dir = tmpdir()
  local man, sections = sample(1)
  assert(ckpt.write(dir, man, sections))
  man, sections = sample(2)
  local p = assert(ckpt.write(dir, man, sections))
  local s = ckpt.read_all(p .. "/MANIFEST")
  -- format 2 in the header (bytes 9..12), with the body's crc still right
  write(p .. "/MANIFEST", s:sub(1, 8) .. "\2\0\0\0" .. s:sub(13))
  local m, why = ckpt.read(p)
  eq(m, nil)
  contains(why, "MANIFEST: format 2, this weir reads format 1")
  os.execute("mkdir " .. dir .. "/.tmp-chk-00000003")
  write(dir .. "/.tmp-chk-00000003/w0.state", "half")
  local newest, bad = ckpt.newest(dir)
  eq(newest.name, "chk-00000001")
  eq(#bad, 1)
  eq(bad[1].name, "chk-00000002")
  os.execute("rm -rf " .. dir)
end)

it("declines a checkpoint on a write error and leaves no temporary directory", function()
  -- a directory where the state file would go: the write fails as a full disk would
  local dir = tmpdir()
  local man, sections = sample(3)
  os.execute("mkdir -p " .. dir .. "/x")
  local ok, err = ckpt.write(dir .. "/x/missing/deeper", man, sections, { dir .. "/nope" })
  eq(ok, nil)
  contains(err, "/nope: no such file or directory")
  eq(#ckpt.list(dir .. "/x/missing/deeper"), 0)
  os.execute("rm -rf " .. dir)
end)

spec.finish()
