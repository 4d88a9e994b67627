-- Benchmark job of bench/checkpoint: N open windows of one shape, for what a checkpoint of them
-- costs (issue 14, item 8). generate -> timestamps (bounded out-of-orderness 10 s) -> key_by
-- -> window -> checksum sink, parallelism 1.
--
--   weir run bench/ckpt_windows.lua [--checkpoint-dir DIR] -- SHAPE N [stop]
--
-- Event i (0-based) has key k = i % KEYS (KEYS = N, for sliding N / 60) and timestamp k % 1000
-- ms; there are KEYS + TAIL events (the tail adds to windows already open, so N windows stay
-- open), and the watermark (max timestamp - 10 s) never reaches a window's end: every window
-- fires at end of input. With `stop` the generator sends the process SIGTERM when it makes
-- event KEYS (every window is open): the stop
-- drains and writes a savepoint, and a run with the same DIR restores it and ends the job.
-- Its sink then prints what the uninterrupted run prints (bench/checkpoint compares the two).
-- After the job, the checkpoint figures (env:metrics().checkpoints) go to stderr as one line,
-- "checkpoints name=value ...".
--
-- Shapes (the window operator each runs on):
--   tumbling  tumbling 5 s, aggregate (count): the fast operator, a number per window
--   sliding   sliding 60 s every 1 s, aggregate (count): the fast operator, sliced (one 1 s
--             slice per key here, in 60 open windows, each with its timer)
--   sessions  session windows (gap 5 s), aggregate (count, with merge): the general operator
--   process   tumbling 5 s, process with a count(4) evictor: the general operator, the window's
--             elements (Lua tables) and the evictor's timestamps
local ffi = require("ffi")
local weir = require("weir")
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

ffi.cdef [[
int kill(int pid, int sig);
int getpid(void);
]]

local SHAPES = { tumbling = true, sliding = true, sessions = true, process = true }
local shape = weir.args[1]
local n = tonumber(weir.args[2] or "")
if not SHAPES[shape] or not n or n < 1 or n % 1 ~= 0 then
  error("bench/ckpt_windows.lua: expected tumbling|sliding|sessions|process and a window count")
end
local stop = weir.args[3] == "stop"
local TAIL = 200000 -- long enough that the stop comes before the generator ends
local SIGTERM = 15

-- sliding: a key's one slice lies in 60 open windows (each with its timer), so N / 60 keys
local keys = shape == "sliding" and math.max(1, math.floor(n / 60)) or n

local function event(i)
  if stop and i == keys then
    ffi.C.kill(ffi.C.getpid(), SIGTERM)
  end
  local k = i % keys
  return { k, k % 1000 }
end

local function digest_term(r)
  return (r.key + 1) * ((r.start or 0) % 65536 + 1) * r.count
end

local env = weir.env{ parallelism = 1 }
local w = env:generate(event, { count = keys + TAIL })
  :assign_timestamps_and_watermarks(
    weir.watermarks.bounded_out_of_orderness("10s"):with_timestamp_assigner(function(e)
      return e[2]
    end))
  :key_by(function(e) return e[1] end)

local function result(key, ctx, counts, out)
  out({ key = key, start = ctx:window().start, count = counts[1] })
end

local fired
if shape == "tumbling" then
  fired = w:window(weir.windows.tumbling_event_time("5s")):aggregate(common.count(), result)
elseif shape == "sliding" then
  fired = w:window(weir.windows.sliding_event_time("60s", "1s")):aggregate(common.count(), result)
elseif shape == "sessions" then
  fired = w:window(weir.windows.event_time_session("5s")):aggregate(common.count(), result)
else
  fired = w:window(weir.windows.tumbling_event_time("5s"))
    :evictor(weir.evictors.count(4))
    :process(function(key, ctx, elements, out)
      local sum = 0
      for _, e in ipairs(elements) do
        sum = sum + e[2] + 1
      end
      out({ key = key, start = ctx:window().start, count = #elements + sum })
    end)
end
fired:sink(common.checksum_sink(digest_term))

env:execute("bench checkpoint " .. shape)

local c = env:metrics() and env:metrics().checkpoints
if c then
  local names = {}
  for k in pairs(c) do
    names[#names + 1] = k
  end
  table.sort(names)
  local parts = {}
  for _, k in ipairs(names) do
    parts[#parts + 1] = ("%s=%s"):format(k, tostring(c[k]))
  end
  io.stderr:write("checkpoints ", table.concat(parts, " "), "\n")
end
