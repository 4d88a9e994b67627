-- Specs for weir.alignment (with_watermark_alignment) on the virtual clock: two replays far
-- apart in event time, a fast one 200 s ahead of a slow one, both 10 records per second of
-- processing time. With alignment the fast one is paused and resumed, the results are those
-- of the job without alignment, and the window state stays small; the slow one ending lets
-- the fast one go (an ended input leaves the group).
local spec = require("spec")
local weir = require("weir")
local it, eq, raises = spec.it, spec.eq, spec.raises

local function truthy(v, what)
  if not v then
    error(what, 2)
  end
end

local function write(path, text)
  local fh = assert(io.open(path, "w"))
  fh:write(text)
  fh:close()
end

-- n lines, one every 100 ms of processing time: "name,ts" with ts = offset + i * 1000
local function replay_text(name, n, offset)
  local lines = {}
  for i = 1, n do
    lines[i] = ("%s %s,%d"):format(i == 1 and "@0" or "+100ms", name, offset + i * 1000)
  end
  return table.concat(lines, "\n") .. "\n"
end

-- Runs the job: per input a 10 s tumbling count. Returns the results (in firing order), the
-- largest number of open windows seen while records flowed, and the final status.
local function run(opts)
  local paths = { os.tmpname(), os.tmpname() }
  write(paths[1], opts.slow_text or replay_text("slow", opts.slow or 300, 0))
  write(paths[2], replay_text("fast", opts.fast or 300, 200000))
  local env = weir.env()
  local function input(path)
    local s = weir.watermarks.monotonous():with_timestamp_assigner(function(v)
      return tonumber(v:match(",(%d+)$"))
    end)
    if opts.idleness then
      s = s:with_idleness(opts.idleness)
    end
    if opts.align then
      s = s:with_watermark_alignment("g", opts.drift or "10s", opts.every)
    end
    return env:replay(path):assign_timestamps_and_watermarks(s)
  end
  local most = 0
  local got = {}
  input(paths[1]):union(input(paths[2]))
    :map(function(v)
      local open = 0
      for _, op in ipairs(env:status().operators) do
        for _, sub in ipairs(op.subtasks) do
          open = open + (sub.open_windows or 0)
        end
      end
      most = math.max(most, open)
      return v
    end)
    :key_by(function(v) return v:match("^(%a+),") end)
    :window(weir.windows.tumbling_event_time("10s"))
    :aggregate({ create = function() return 0 end, add = function(_, n) return n + 1 end,
                 result = function(n) return n end },
      function(k, ctx, counts, out) out(("%s %d %d"):format(k, ctx:window().start, counts[1])) end)
    :sink(function(v) got[#got + 1] = v end)
  local ok, err = pcall(env.execute, env)
  os.remove(paths[1])
  os.remove(paths[2])
  if not ok then
    error(err, 0)
  end
  return got, most, env:status()
end

spec.describe("with_watermark_alignment", function()
  it("pauses the input far ahead and resumes it: the same results, bounded state", function()
    local plain, plain_most = run({})
    local got, most, st = run({ align = true })
    eq(#plain, 2 * 31) -- per input 29 full windows, [s, s + 10 s) of 9 and one of 1
    eq(got, plain) -- the same results in the same order
    -- without alignment the fast input's windows pile up behind the slow watermark (200 s
    -- ahead: 20 windows); with it the fast one waits within 10 s (+ one update's records)
    truthy(plain_most >= 19, "unaligned: " .. plain_most .. " open windows")
    truthy(most <= 5, "aligned: " .. most .. " open windows")
    local g = st.alignment.groups[1]
    eq(g.name, "g")
    eq(#g.members, 2)
    local slow, fast = g.members[1], g.members[2]
    eq(slow.pauses, 0)
    truthy(fast.pauses >= 1, "the fast input was paused")
    truthy(fast.paused_ms >= 15000, "for most of the slow one's catching up: "
      .. fast.paused_ms)
    eq(fast.paused, false) -- resumed: every record came, both ended
    eq(#st.alignment.paused, 0)
  end)

  it("lets the fast input go when the slow one ends (it leaves the group)", function()
    -- the slow input ends at 100 s of event time, far behind the fast one (from 200 s)
    local plain = run({ slow = 100 })
    local got, _, st = run({ slow = 100, align = true })
    eq(got, plain)
    local fast = st.alignment.groups[1].members[2]
    truthy(fast.pauses >= 1, "paused while the slow input ran: " .. weir.format(st.alignment))
    eq(fast.paused, false)
  end)

  it("an idle input does not hold the group back", function()
    -- the slow input: 20 records, 28 s of silence (idle after 1 s of it), 20 more
    local text = replay_text("slow", 20, 0) .. "+28s\n"
    for i = 21, 40 do
      text = text .. ("+100ms slow,%d\n"):format(i * 1000)
    end
    local _, _, st = run({ align = true, idleness = "1s", slow_text = text })
    local slow, fast = st.alignment.groups[1].members[1], st.alignment.groups[1].members[2]
    eq(slow.pauses, 0)
    -- paused at the first update (1 s); the slow input, quiet from 1.9 s, is idle at the tick
    -- of 3.4 s, so the update at 4 s resumes the fast one; the slow one's records from 30 s
    -- make it active again at the tick of 30.2 s: paused again at 31 s, until the update at
    -- 32 s after the slow input's end
    eq(fast.pauses, 2)
    eq(fast.paused_ms, 3000 + 1000)
  end)

  it("a drift wider than the gap pauses nothing", function()
    local _, _, st = run({ align = true, drift = "1h" })
    eq(st.alignment.groups[1].members[2].pauses, 0)
  end)

  it("updates at its own interval (rounded to the periodic tick)", function()
    local _, most = run({ align = true, every = "5s" })
    -- a pause waits for an update: 5 s of the fast input's records (50 s of event time)
    truthy(most <= 10, "aligned every 5 s: " .. most .. " open windows")
  end)
end)

spec.describe("with_watermark_alignment's arguments", function()
  local m = weir.watermarks.monotonous()
  it("needs a group name", function()
    raises(function() m:with_watermark_alignment(nil, "1s") end, "the group must be")
    raises(function() m:with_watermark_alignment("", "1s") end, "the group must be")
  end)
  it("needs a max drift of at least 0 and an update interval above 0", function()
    raises(function() m:with_watermark_alignment("g") end, "max_drift is missing")
    raises(function() m:with_watermark_alignment("g", "-1s") end, "max_drift")
    raises(function() m:with_watermark_alignment("g", "1s", "0s") end, "update_interval")
    raises(function() m:with_watermark_alignment("g", "1s", "soon") end, "update_interval")
  end)
  it("defaults the update interval to Flink's 1 s", function()
    eq(m:with_watermark_alignment("g", "10s").alignment.update_interval, 1000)
    eq(m:with_watermark_alignment("g", 500, 250).alignment.max_drift, 500)
  end)
end)
spec.finish()
