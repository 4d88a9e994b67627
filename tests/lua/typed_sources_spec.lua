-- Specs for records filled in C: read_text_file{record = ...} (lines parsed in C into typed
-- records, malformed lines as errors) and env:nexmark_bids (Nexmark bids made in C).
local ffi = require("ffi")
local spec = require("spec")
local weir = require("weir")
local it, eq, raises = spec.it, spec.eq, spec.raises

local ev = weir.record_type("spec_ev", { "int32_t key", "double ts" })
local small = weir.record_type("spec_small", { "int8_t a", "uint16_t b", "float c", "bool d" })

local function write_file(text)
  local path = os.tmpname()
  local fh = assert(io.open(path, "wb"))
  fh:write(text)
  fh:close()
  return path
end

-- Runs read_text_file(path, opts) -> map(copy to a table) -> collect.
local function read(text, opts, env_opts)
  local path = write_file(text)
  local env = weir.env(env_opts or {})
  local h = env:read_text_file(path, opts)
    :map(function(r) return { r.key, r.ts } end)
    :collect()
  local ok, err = pcall(env.execute, env, "spec")
  os.remove(path)
  if not ok then
    error(err, 0)
  end
  return h:values(), path
end

spec.describe("read_text_file{record = ...}", function()
  it("parses each line into a record, fields in declaration order", function()
    eq(read("1,1000\n-2,2.5\n3,  7\n", { record = ev }),
      { { 1, 1000 }, { -2, 2.5 }, { 3, 7 } })
  end)
  it("hands the first operator cdata of the declared type", function()
    local path = write_file("-5,65535,0.5,true\n127,0,-1e3,0\n")
    local env = weir.env{}
    local h = env:read_text_file(path, { record = small })
      :map(function(r)
        return { ffi.istype(small, r), r.a, r.b, r.c, r.d }
      end)
      :collect()
    env:execute()
    os.remove(path)
    eq(h:values(), { { true, -5, 65535, 0.5, true }, { true, 127, 0, -1000, false } })
  end)
  it("takes another separator, CRLF and a last line without newline", function()
    eq(read("1;2\r\n3;4", { record = ev, separator = ";" }), { { 1, 2 }, { 3, 4 } })
  end)
  it("delivers nothing for an empty last line, as the text path", function()
    eq(read("1,2\n", { record = ev }), { { 1, 2 } })
    eq(read("", { record = ev }), {})
  end)
  it("rejects a record option that is not a record type, and a bad separator", function()
    local env = weir.env{}
    raises(function() env:read_text_file("x", { record = {} }) end,
      "read_text_file: record must be a type from weir.record_type")
    raises(function() env:read_text_file("x", { record = ev, separator = ",," }) end,
      "separator must be a string of one byte")
    raises(function() env:read_text_file("x", { separator = ";" }) end,
      "separator needs the record option")
  end)
end)

spec.describe("malformed lines", function()
  local cases = {
    { "wrong field count", "1,2\n3\n4,5\n",
      'line 2: expected 2 fields separated by ",", got 1: "3"' },
    { "too many fields", "1,2\n3,4,5\n",
      'line 2: expected 2 fields separated by ",", got 3: "3,4,5"' },
    { "not a number", "1,2\n3,x\n", 'line 2: field 2 (ts) is not a number: "3,x"' },
    { "not an integer", "1.5,2\n", 'line 1: field 1 (key) is not an integer: "1.5,2"' },
    { "int out of range", "1,2\n3,4\n2147483648,5\n",
      'line 3: field 1 (key) is out of range for int32_t: "2147483648,5"' },
  }
  for _, c in ipairs(cases) do
    it("fail the job loudly: " .. c[1], function()
      local msg = raises(function() read(c[2], { record = ev }) end, c[3], "read_text_file ")
      assert(msg:find("subtask 1/1", 1, true), msg)
    end)
  end
  it("name a field of a small type out of range", function()
    local path = write_file("1,2,3,true\n-129,2,3,true\n")
    local env = weir.env{}
    env:read_text_file(path, { record = small }):collect()
    raises(function() env:execute() end, "read_text_file " .. path,
      'line 2: field 1 (a) is out of range for int8_t: "-129,2,3,true"')
    os.remove(path)
  end)
  it("go to the on_error side output and the job goes on", function()
    local errors = weir.output_tag("errors")
    local path = write_file("1,10\n2\n3,x\n99999999999,1\n4,40\n1,2,3\n5,50")
    local env = weir.env{ on_error = errors }
    local parsed = env:read_text_file(path, { record = ev })
    local ok = parsed:map(function(r) return { r.key, r.ts } end):collect()
    local bad = parsed:get_side_output(errors)
      :map(function(e) return { e.value, e.operator, e.error } end)
      :collect()
    env:execute()
    os.remove(path)
    eq(ok:values(), { { 1, 10 }, { 4, 40 }, { 5, 50 } })
    local label = "read_text_file " .. path
    eq(bad:values(), {
      { "2", label, 'line 2: expected 2 fields separated by ",", got 1: "2"' },
      { "3,x", label, 'line 3: field 2 (ts) is not a number: "3,x"' },
      { "99999999999,1", label,
        'line 4: field 1 (key) is out of range for int32_t: "99999999999,1"' },
      { "1,2,3", label, 'line 6: expected 2 fields separated by ",", got 3: "1,2,3"' },
    })
  end)
  it("keep their line numbers past overlong lines", function()
    local path = write_file("1,1\n" .. ("9"):rep(100) .. "\n2,x\n3,3\n")
    local env = weir.env{ on_error = weir.output_tag("errors") }
    local parsed = env:read_text_file(path, { record = ev, max_line_bytes = 50 })
    local ok = parsed:map(function(r) return r.key end):collect()
    local bad = parsed:get_side_output(weir.output_tag("errors"))
      :map(function(e) return e.error end):collect()
    env:execute()
    os.remove(path)
    eq(ok:values(), { 1, 3 })
    eq(bad:values(), { 'line 3: field 2 (ts) is not a number: "2,x"' })
  end)
end)

-- The file source cuts and parses a buffer of number-only lines in one pass (fields.c,
-- wr_fields_scan) and hands the lines it does not take to the line-by-line parse: the records,
-- errors and line numbers must be those of cutting the text here and parsing each line with
-- weir_fields_parse, for every kind of line a user could give, across read blocks (256 KiB) and
-- batches.
spec.describe("the one pass over a buffer of lines", function()
  local records = require("weir.records")
  local C = ffi.C
  local seed = 12345
  local function rand(n)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n
  end
  local KINDS = {
    function() return ("%d,%d"):format(rand(10000), rand(100000)) end,
    function() return ("%d,%d"):format(rand(10000), rand(100000)) end,
    function() return ("%d,%d\r"):format(rand(100), rand(100)) end, -- CRLF
    function() return ("-%d,-%d.%d"):format(rand(100), rand(100), rand(1000)) end,
    function() return ("+%d,.%d"):format(rand(100), rand(10)) end,
    function() return ("%d.,%d."):format(rand(10), rand(10)) end, -- not an integer
    function() return ("%d, %d "):format(rand(10), rand(10)) end, -- blanks: the general way
    function() return ("%d,%de3"):format(rand(10), rand(10)) end, -- exponent
    function() return "" end,
    function() return "\r" end,
    function() return ("%d"):format(rand(10)) end,
    function() return ("%d,%d,%d"):format(rand(10), rand(10), rand(10)) end,
    function() return ("%d,x%d"):format(rand(10), rand(10)) end,
    function() return ('"%d",%d'):format(rand(10), rand(10)) end,
    function() return ("%d,1234567890123456"):format(rand(10)) end, -- 16 digits: strtod
    function() return ("1,%s"):format(("9"):rep(400)) end, -- out of range (inf): error
    function() return "2147483648,1" end,
    function() return ("00000000000000000000%d,1"):format(rand(10)) end, -- 21 digits
    function() return ("%d,%s%d"):format(rand(10), (" "):rep(100), rand(10)) end,
    function() return ("%d,%d"):format(rand(10), rand(10)):rep(30, ";") end, -- overlong
    function() return "-,+" end,
    function() return "1,2\r\r" end,
    function() return "1,-0" end,
  }
  local MAX = 200
  local function lines_of(text)
    local out, n = {}, 0
    for line in text:gmatch("([^\n]*)\n") do
      n = n + 1
      out[n] = line
    end
    local last = 0 -- (text:match("[^\n]*$") backtracks from every byte)
    for i = #text, 1, -1 do
      if text:byte(i) == 10 then
        last = i
        break
      end
    end
    if last < #text then
      out[n + 1] = text:sub(last + 1)
    end
    return out
  end
  local function expected(text, layout)
    local recs, errs = {}, {}
    local r = ffi.new(ev)
    for i, line in ipairs(lines_of(text)) do
      line = line:gsub("\r$", "", 1)
      if #line <= MAX then
        if C.weir_fields_parse(layout, line, #line, r) == 0 then
          recs[#recs + 1] = ("%d %.17g"):format(r.key, r.ts)
        else
          errs[#errs + 1] = i
        end
      end
    end
    return recs, errs
  end
  local function run(text)
    local path = write_file(text)
    local errors = weir.output_tag("errors")
    local env = weir.env{ on_error = errors }
    local s = env:read_text_file(path, { record = ev, max_line_bytes = MAX })
    local ok = s:map(function(x) return ("%d %.17g"):format(x.key, x.ts) end):collect()
    local bad = s:get_side_output(errors)
      :map(function(e) return tonumber(e.error:match("^line (%d+):")) end):collect()
    env:execute()
    os.remove(path)
    return ok:values(), bad:values()
  end
  -- (an error routed to on_error costs far more than a record: the first case is short)
  for _, case in ipairs({ { "every kind of line", 1, 2000, 0 },
      { "good lines with a few others across read blocks", 32, 50000, 2 * 256 * 1024 } }) do
    it(case[1] .. ", with and without a last newline", function()
      local layout = records.layout(ev, ",")
      local lines = {}
      for i = 1, case[3] do
        lines[i] = KINDS[rand(case[2]) == 0 and rand(#KINDS) + 1 or 1]()
      end
      for _, tail in ipairs({ "\n", "" }) do
        local text = table.concat(lines, "\n") .. tail
        assert(#text > case[4], "the file spans read blocks")
        local want_recs, want_errs = expected(text, layout)
        local got_recs, got_errs = run(text)
        -- element by element (eq formats whole tables)
        for _, pair in ipairs({ { got_recs, want_recs, "record" }, { got_errs, want_errs,
            "error on line" } }) do
          local got, want = pair[1], pair[2]
          for i = 1, math.max(#got, #want) do
            if got[i] ~= want[i] then
              error(("%s %d: expected %s, got %s"):format(pair[3], i, tostring(want[i]),
                tostring(got[i])))
            end
          end
        end
      end
    end)
  end
  it("takes a line that ends a block, and one across blocks", function()
    -- a long line of blanks puts a line's end near and past the 256 KiB read block's end
    for _, pad in ipairs({ 256 * 1024 - 12, 256 * 1024 - 5, 256 * 1024 + 3 }) do
      local text = "1,1\n" .. "2," .. (" "):rep(pad) .. "2\n3,3\n4,4"
      local path = write_file(text)
      local env = weir.env{}
      local h = env:read_text_file(path, { record = ev, max_line_bytes = 1024 * 1024 })
        :map(function(x) return x.key end):collect()
      env:execute()
      os.remove(path)
      eq(h:values(), { 1, 2, 3, 4 })
    end
  end)
end)

spec.describe("typed records and user functions", function()
  it("a kept record is not overwritten by later batches", function()
    local lines = {}
    for i = 1, 5000 do
      lines[i] = ("%d,%d"):format(i, i * 10)
    end
    local path = write_file(table.concat(lines, "\n"))
    local env = weir.env{ batch_size = 16 }
    local kept = {}
    env:read_text_file(path, { record = ev })
      :map(function(r) kept[#kept + 1] = r return r end)
      :collect()
    env:execute()
    os.remove(path)
    eq(#kept, 5000)
    for i = 1, 5000 do
      if kept[i].key ~= i or kept[i].ts ~= i * 10 then
        error(("record %d changed: %s"):format(i, tostring(kept[i])))
      end
    end
  end)
  it("an error in a user function names the record and its line", function()
    local path = write_file("1,1\n2,2\n3,3\n")
    raises(function()
      local env = weir.env{}
      env:read_text_file(path, { record = ev })
        :map(function(r) if r.key == 2 then error("boom") end return r end)
        :collect()
      env:execute()
    end, "map (", "boom", "record: spec_ev{key=2, ts=2} (line 2 of read_text_file " .. path)
    os.remove(path)
  end)
  it("a failing user function routes typed records to on_error and goes on", function()
    local errors = weir.output_tag("errors")
    local path = write_file("1,1\n2,2\n3,3\n")
    local env = weir.env{ on_error = errors }
    local mapped = env:read_text_file(path, { record = ev })
      :map(function(r) return assert(r.key ~= 2 and r.key, "two") end)
    local ok = mapped:collect()
    local bad = mapped:get_side_output(errors):map(function(e) return e.value.key end):collect()
    env:execute()
    os.remove(path)
    eq(ok:values(), { 1, 3 })
    eq(bad:values(), { 2 })
  end)
  it("names the line of a record in a later batch, and resumes after it once", function()
    local lines = {}
    for i = 1, 200 do lines[i] = ("%d,%d"):format(i, i) end
    local path = write_file(table.concat(lines, "\n") .. "\n")
    raises(function()
      local env = weir.env{ batch_size = 16 }
      env:read_text_file(path, { record = ev })
        :map(function(r) if r.key == 150 then error("boom") end return r end)
        :collect()
      env:execute()
    end, "boom", "(line 150 of read_text_file " .. path)
    local errors = weir.output_tag("errors")
    local env = weir.env{ on_error = errors, batch_size = 16 }
    local mapped = env:read_text_file(path, { record = ev })
      :map(function(r) return assert(r.key % 37 ~= 0 and r.key, "37") end)
    local ok = mapped:collect()
    local bad = mapped:get_side_output(errors):map(function(e) return e.value.key end):collect()
    env:execute()
    os.remove(path)
    local want = {}
    for i = 1, 200 do if i % 37 ~= 0 then want[#want + 1] = i end end
    eq(ok:values(), want)
    eq(bad:values(), { 37, 74, 111, 148, 185 })
  end)
end)

spec.describe("nexmark_bids", function()
  local bid = weir.nexmark.bid
  local function bids(opts, env_opts)
    local env = weir.env(env_opts or {})
    local h = env:nexmark_bids(opts)
      :map(function(b)
        assert(ffi.istype(bid, b))
        return { b.auction, b.bidder, b.price, b.ts }
      end)
      :collect()
    env:execute()
    return h:values()
  end
  it("has the layout of the C generator's struct", function()
    eq(ffi.sizeof(bid), 24)
    eq({ ffi.offsetof(bid, "auction"), ffi.offsetof(bid, "bidder"), ffi.offsetof(bid, "price"),
         ffi.offsetof(bid, "ts") }, { 0, 4, 8, 16 })
  end)
  it("makes count bids, the same for the same seed", function()
    local a = bids{ count = 3000, seed = 7 }
    eq(#a, 3000)
    eq(bids({ count = 3000, seed = 7 }, { batch_size = 7 }), a)
    local b = bids{ count = 3000, seed = 8 }
    assert(weir.format(a) ~= weir.format(b), "another seed gives other bids")
  end)
  it("stamps bids in order at the configured event rate", function()
    local a = bids{ count = 4600, events_per_second = 1000, base_time = 5000 }
    eq(a[1][4], 5004) -- bid 0 is event 4: 4 ms after the base time at 1000 events/s
    eq(a[#a][4], 5000 + 99 * 50 + 49) -- bid 4599 is event 4999
    for i = 2, #a do
      if a[i][4] < a[i - 1][4] then
        error(("bid %d goes back in time"):format(i - 1))
      end
    end
  end)
  it("names auctions and bidders that exist, prices of 1 to 10^6 dollars", function()
    local a = bids{ count = 20000, seed = 3 }
    local hot = 0
    for i, b in ipairs(a) do
      local event = math.floor((i - 1) / 46) * 50 + 4 + (i - 1) % 46
      local last_auction = math.floor(event / 50) * 3 + 2
      local people = math.floor(event / 50) + 1
      assert(b[1] >= 1000 and b[1] <= 1000 + last_auction + 10, "auction in range")
      assert(b[1] >= 1000 + last_auction - 100 - 100, "auction recent")
      assert(b[2] >= 1000 and b[2] <= 1000 + people + 10, "bidder in range")
      assert(b[3] >= 100 and b[3] <= 100000000, "price in range")
      if b[1] == 1000 + math.floor(last_auction / 100) * 100 then
        hot = hot + 1
      end
    end
    -- hot_auction_ratio 2: about half the bids go to the hot auction
    assert(hot > 9000 and hot < 12000, ("hot bids: %d of 20000"):format(hot))
  end)
  it("rejects unknown and bad options", function()
    local env = weir.env{}
    raises(function() env:nexmark_bids{ rate = 1 } end, "nexmark_bids: unknown option 'rate'")
    raises(function() env:nexmark_bids{ events_per_second = 0 } end,
      "events_per_second must be a positive number")
    raises(function() env:nexmark_bids{ hot_auction_ratio = 0 } end,
      "hot_auction_ratio must be an integer >= 1")
  end)
end)

spec.finish()
