-- Specs for the record formats (API.md, Formats): format = "json" and "csv" on text sources,
-- into Lua tables and typed records (weir.json, weir.csv, runtime/json.cc and csv.c), string
-- fields of weir.record_type, and JSON out of print and write_text.
local ffi = require("ffi")
local spec = require("spec")
local weir = require("weir")
local it, eq, raises = spec.it, spec.eq, spec.raises

local click = weir.record_type("fmt_click", { "string user", "double ts", "string[4] page" })

local function write_file(text)
  local path = os.tmpname()
  local fh = assert(io.open(path, "wb"))
  fh:write(text)
  fh:close()
  return path
end

local function read_all(path)
  local fh = assert(io.open(path, "rb"))
  local s = fh:read("*a")
  fh:close()
  return s
end

-- Runs source(env, path) -> map(f) -> collect; with on_error also the errors' texts.
local function run(text, opts, f, env_opts, kind)
  local path = write_file(text)
  local env = weir.env(env_opts or {})
  local src
  if kind == "replay" then
    local lines = {}
    for line in (text .. "\n"):gmatch("(.-)\n") do
      if line ~= "" then
        lines[#lines + 1] = "+0 " .. line
      end
    end
    local fh = assert(io.open(path, "wb"))
    fh:write(table.concat(lines, "\n"), "\n")
    fh:close()
    src = env:replay(path, opts)
  else
    src = env:read_text_file(path, opts)
  end
  local h = src:map(f or function(v) return v end):collect()
  local errs
  if env_opts and env_opts.on_error then
    errs = src:get_side_output(env_opts.on_error):map(function(e) return e.error end):collect()
  end
  local ok, err = pcall(env.execute, env, "spec")
  os.remove(path)
  if not ok then
    error(err, 0)
  end
  return h:values(), errs and errs:values()
end

local function fields(r)
  return { r.user, r.ts, r.page }
end

spec.describe("format = \"json\" into Lua values", function()
  it("maps objects, arrays, numbers, strings, booleans and null", function()
    local got = run('{"a":1,"b":[true,false,null,"x"],"c":{"d":null},"e":-2.5e3}\n[]\n{}\n'
      .. '"s"\n3\nnull\n', { format = "json" })
    eq(got[1].a, 1)
    eq(got[1].b, { true, false, weir.null, "x" })
    eq(got[1].c, {}) -- a member that is null is left out
    eq(got[1].e, -2500)
    eq(got[2], {})
    eq(got[3], {})
    eq(got[4], "s")
    eq(got[5], 3)
    eq(got[6] == weir.null, true)
    eq(#got, 6)
  end)
  it("keeps NUL bytes and decodes escapes", function()
    local got = run('"a\\u0000b\\n\\u00e9\\ud83d\\ude00"\n', { format = "json" })
    eq(got[1], "a\0b\n\195\169\240\159\152\128")
  end)
  it("names the line, the column and what was expected; on_error gets the line", function()
    local tag = weir.output_tag("bad")
    local got, errs = run('{"a":1}\n{"a":1,}\n{"a" 2}\n[1,2\n{"b":2}\n', { format = "json" },
      nil, { on_error = tag })
    eq(#got, 2)
    eq(errs, {
      'line 2: column 8: string or \'}\' expected near \'}\': "{\\"a\\":1,}"',
      'line 3: column 6: \':\' expected near \'2\': "{\\"a\\" 2}"',
      'line 4: column 4: \']\' expected near end of file: "[1,2"',
    })
  end)
  it("fails the job without on_error", function()
    raises(function() run('{"a":1}\nnope\n', { format = "json" }) end,
      "line 2: column 4: invalid token near 'nope'")
  end)
  it("rejects invalid UTF-8, numbers beyond a double and trailing text", function()
    local tag = weir.output_tag("bad2")
    local got, errs = run('"\255"\n1e999\n1 2\n', { format = "json" }, nil, { on_error = tag })
    eq(#got, 0)
    eq(#errs, 3)
    assert(errs[2]:find("overflow", 1, true), errs[2])
    assert(errs[3]:find("end of file expected", 1, true), errs[3])
  end)
end)

spec.describe("format = \"json\" into typed records", function()
  it("fills fields by name, from a file (C) and from a replay (Lua)", function()
    local text = '{"page":"/a","ts":5,"user":"ann","more":{"x":[1]}}\n'
      .. '{"user":"bob","ts":6.5,"page":""}\n'
    local want = { { "ann", 5, "/a" }, { "bob", 6.5, "" } }
    eq(run(text, { format = "json", record = click }, fields), want)
    eq(run(text, { format = "json", record = click }, fields, nil, "replay"), want)
  end)
  it("hands cdata of the type on", function()
    local got = run('{"user":"u","ts":1,"page":"p"}\n', { format = "json", record = click },
      function(r) return ffi.istype(click, r) end)
    eq(got, { true })
  end)
  it("names the field of a value of the wrong kind, a missing one, a long string", function()
    local tag = weir.output_tag("tbad")
    for _, kind in ipairs{ "file", "replay" } do
      local got, errs = run('{"user":"u","ts":"x","page":"p"}\n{"user":"u","page":"p"}\n'
        .. '{"user":"u","ts":1,"page":"/long"}\n{"user":"ok","ts":1,"page":"p"}\n',
        { format = "json", record = click }, fields, { on_error = tag }, kind)
      eq(got, { { "ok", 1, "p" } })
      eq(errs, {
        'line 1: field ts (double): expected a number, got a string: '
          .. '"{\\"user\\":\\"u\\",\\"ts\\":\\"x\\",\\"page\\":\\"p\\"}"',
        'line 2: field ts (double) is missing: "{\\"user\\":\\"u\\",\\"page\\":\\"p\\"}"',
        'line 3: field page (string): longer than its bound: '
          .. '"{\\"user\\":\\"u\\",\\"ts\\":1,\\"page\\":\\"/long\\"}"',
      })
    end
  end)
end)

spec.describe("format = \"csv\"", function()
  it("gives sequences of strings without a header", function()
    eq(run('a,"b,c",\n"x""y",z,\r\n', { format = "csv" }),
      { { "a", "b,c", "" }, { 'x"y', "z", "" } })
  end)
  it("gives tables by the header's names, and another separator", function()
    eq(run('id;name\n1;"a;b"\n2;c\n', { format = "csv", header = true, separator = ";" }),
      { { id = "1", name = "a;b" }, { id = "2", name = "c" } })
  end)
  it("fails a row with another number of fields than the header, and bad quotes", function()
    local tag = weir.output_tag("cbad")
    local got, errs = run('a,b\n1,2\n1,2,3\n"x\n1"y,2\n', { format = "csv", header = true },
      nil, { on_error = tag })
    eq(got, { { a = "1", b = "2" } })
    eq(errs, {
      'line 3: expected 2 fields (as the header), got 3: "1,2,3"',
      'line 4: column 1: the quoted field has no closing quote: "\\"x"',
      'line 5: column 2: a quote inside an unquoted field (quote the field and write the '
        .. 'quote twice): "1\\"y,2"',
    })
  end)
  it("types fields with a record, by position or through the header", function()
    local rec = weir.record_type("fmt_row", { "int32_t id", "string name", "double price" })
    local f = function(r) return { r.id, r.name, r.price } end
    eq(run('1,"a ""q""",2.5\n', { format = "csv", record = rec }, f), { { 1, 'a "q"', 2.5 } })
    for _, kind in ipairs{ "file", "replay" } do
      eq(run('price,name,id\n2.5,a,1\n3,b,2\n', { format = "csv", header = true, record = rec },
        f, nil, kind), { { 1, "a", 2.5 }, { 2, "b", 3 } })
    end
    raises(function()
      run('id,name\n1,a\n', { format = "csv", header = true, record = rec }, f)
    end, "line 1: the header names no column price (field 3 of the record)")
    raises(function() run('x,a,1\n', { format = "csv", record = rec }, f) end,
      "line 1: column 1: field id is not an integer for int32_t")
  end)
end)

spec.describe("source options", function()
  it("rejects a bad format, header without csv, separator with json", function()
    local env = weir.env{}
    raises(function() env:read_text_file("x", { format = "xml" }) end,
      'read_text_file: format must be "text", "json" or "csv", got "xml"')
    raises(function() env:read_text_file("x", { format = "json", header = true }) end,
      "header (true or false) is an option of format = \"csv\"")
    raises(function() env:stdin{ format = "json", separator = ";" } end,
      "separator is not an option of format = \"json\"")
    raises(function() env:read_text_file("x", { format = "csv", separator = '"' }) end,
      "separator must be a string of one byte other than the quote")
    raises(function() env:replay("x", { nope = 1 }) end, "nope")
  end)
end)

spec.describe("string fields of weir.record_type", function()
  it("read as Lua strings and check what is written", function()
    local c = click("ann", 1, "/a")
    eq(c.user, "ann")
    eq(tostring(c), 'fmt_click{user="ann", ts=1, page="/a"}')
    c.page = "/b"
    eq(click(c).page, "/b")
    eq(click{ user = "x", ts = 2, page = "p" }.user, "x")
    raises(function() c.page = "/long" end, "field page takes a string of at most 4 bytes")
    raises(function() c.user = "a\0b" end, "without NUL")
    raises(function() click("a", 1, 5) end, "got number")
    raises(function() return c.nope end, "record fmt_click has no field nope")
    raises(function() weir.record_type("fmt_bad", { "string[0] s" }) end, "string[N]")
  end)
  it("fill from typed text, a long piece is an error of the line", function()
    local tag = weir.output_tag("sbad")
    local got, errs = run("ann,1,/a\nbob,2,/long\n", { record = click }, fields,
      { on_error = tag })
    eq(got, { { "ann", 1, "/a" } })
    eq(errs, { 'line 2: field 3 (page) is longer than 4 bytes or holds a NUL: "bob,2,/long"' })
  end)
end)

spec.describe("JSON out: weir.json.encode, print and write_text", function()
  local enc = weir.json.encode
  it("maps Lua values as documented", function()
    eq(enc({ b = { 1, 2, { x = true } }, a = "q\"\n\1", n = weir.null, [3] = 0.1 }),
      '{"3":0.1,"a":"q\\"\\n\\u0001","b":[1,2,{"x":true}],"n":null}')
    eq(enc({}), "[]")
    eq(enc(2 ^ 53), "9007199254740992")
    eq(enc(1e300), "1e+300")
    eq(enc(-0.0), "-0")
    eq(enc(click("u", 1.5, "p")), '{"user":"u","ts":1.5,"page":"p"}')
  end)
  it("fails for non-finite numbers, odd keys, cycles and functions", function()
    raises(function() enc({ x = { 0 / 0 } }) end, "cannot write nan as JSON (at .x[1])")
    raises(function() enc(math.huge) end, "cannot write inf as JSON")
    raises(function() enc({ [true] = 1 }) end, "a table with a boolean key")
    local t = {}
    t.t = t
    raises(function() enc(t) end, "a table that contains itself")
    raises(function() enc(print) end, "cannot write a function as JSON")
  end)
  it("write_text{format = \"json\"} writes one JSON text per line, strings quoted", function()
    local out = os.tmpname()
    os.remove(out)
    local env = weir.env{}
    env:from_elements({ a = 1 }, "s", { 1, weir.null }):write_text(out, { format = "json" })
    env:execute()
    eq(read_all(out), '{"a":1}\n"s"\n[1,null]\n')
    os.remove(out)
  end)
  it("a record JSON cannot write fails the job naming the sink", function()
    local out = os.tmpname()
    os.remove(out)
    local env = weir.env{}
    env:from_elements({ a = 0 / 0 }):write_text(out, { format = "json" })
    raises(function() env:execute() end, "write_text", "cannot write nan as JSON (at .a)")
    os.remove(out)
  end)
  it("print takes {id, format}", function()
    local env = weir.env{}
    raises(function() env:from_elements(1):print{ format = "xml" } end,
      'print: format must be "text" or "json"')
    raises(function() env:from_elements(1):print(5) end, "print: the sink identifier")
    env:execute()
  end)
end)

spec.finish()
