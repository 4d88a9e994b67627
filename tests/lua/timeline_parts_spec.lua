-- Specs for the parts weir.timeline is made of, on hand-made data (no job runs):
-- weir.timeline_record's --data text and its reader, weir.timeline_svg's layout (lanes, rows of
-- overlapping windows, what is not drawn), and the face weir.timeline handing out the same
-- functions. The recorder itself, on a running job, is in timeline_spec.lua.
local spec = require("spec")
local timeline = require("weir.timeline")
local record = require("weir.timeline_record")
local svg = require("weir.timeline_svg")
local it, eq = spec.it, spec.eq

local function data(over)
  local d = { job = "parts", params = {}, records_in = 0, late_dropped = 0, end_at = 0,
              stopped = false, keys = {}, elements = {}, late = {}, fires = {}, open = {},
              watermarks = {}, idle = {}, operators = {} }
  for k, v in pairs(over or {}) do
    d[k] = v
  end
  return d
end

local function count(s, pattern)
  local n = 0
  for _ in s:gmatch(pattern) do
    n = n + 1
  end
  return n
end

spec.describe("weir.timeline_record", function()
  it("writes infinities, strings and nested tables that read back the same", function()
    local d = data({ job = 'a "quoted"\njob', end_at = 1718157600000.5,
                     watermarks = { { at = 0, w = -math.huge, operator = "w" },
                                    { at = 5, w = math.huge, operator = "w" } } })
    local path = os.tmpname()
    assert(timeline.write_file(path, record.data_text(d)))
    local back = assert(record.read_data(path))
    os.remove(path)
    eq(back, d)
  end)
  it("refuses a file that is not a data table", function()
    local path = os.tmpname()
    assert(timeline.write_file(path, "return 42\n"))
    local d, err = record.read_data(path)
    os.remove(path)
    eq(d, nil)
    eq(err, path .. ": not a weir timeline data file")
  end)
end)

spec.describe("weir.timeline_svg", function()
  it("puts overlapping windows of a key in rows of their own", function()
    local one = data({ keys = { "a" }, fires = {
      { key = 1, start = 0, stop = 1000, kind = "on time", at = 1000 } } })
    local two = data({ keys = { "a" }, fires = {
      { key = 1, start = 0, stop = 1000, kind = "on time", at = 1000 },
      { key = 1, start = 500, stop = 1500, kind = "on time", at = 1500 } } })
    local _, bottom1 = svg.svg(one)
    local _, bottom2 = svg.svg(two)
    eq(bottom2 - bottom1, 15) -- one more row of windows in the lane
  end)
  it("shades every other lane and says which keys it left out", function()
    local keys, elements = {}, {}
    for k = 1, 45 do
      keys[k] = "k" .. k
      elements[k] = { key = k, ts = k, at = k }
    end
    local s = svg.svg(data({ keys = keys, elements = elements }))
    eq(count(s, 'fill="#f7f7f7"'), 20) -- lanes 2, 4, ..., 40
    assert(s:find("(5 more key(s) not drawn)", 1, true), "the keys not drawn")
    eq(count(s, 'r="3.5" fill="#37474f"'), 40 + 2) -- the records drawn per lane, and two legends
  end)
  it("says when no record reached a window", function()
    assert(svg.svg(data()):find("(no record reached a window)", 1, true))
  end)
  it("is what weir.timeline gives", function()
    eq(timeline.svg, svg.svg)
    eq(timeline.ms_text, svg.ms_text)
    eq(timeline.attach, record.attach)
    eq(timeline.snapshot, record.snapshot)
    eq(timeline.read_data, record.read_data)
  end)
end)

spec.finish()
