-- Benchmark job: read_text_file -> parse "key,ts" (in Lua into a table, or in C) -> timestamps
-- (monotonous) -> key_by -> tumbling 5 s event-time windows -> aggregate (count) -> checksum
-- sink, parallelism 1 (one core). The windows_table job of bench/windows.lua with its generator
-- replaced by a text file parsed in Lua, so the difference between the two is what reading and
-- parsing a line costs. bench/baseline/text.c parses the same file in plain C and aggregates;
-- bench/run checks that both print the same line before it compares their times.
--
--   weir run bench/text.lua -- FILE [match|find|c|json|json_lua]
--
-- FILE holds line i (0-based) = "<i % 10000>,<floor(i / 10)>" (bench/run writes it with awk);
-- for json and json_lua it holds the same events as JSON lines,
-- {"key":<i % 10000>,"ts":<floor(i / 10)>,"page":"/item/<i % 97>"}: "json" reads them with
-- format = "json" into typed records (key, ts and a string page, parsed in C by simdjson),
-- "json_lua" into Lua tables.
-- "find" (the default, bench/run's text_lua) parses with string.find(line, ",", 1, true) and
-- two string.sub + tonumber, which LuaJIT compiles; "match" with line:match("^(%d+),(%d+)$"),
-- which it does not; "c" has weir parse the lines in C into typed records
-- (read_text_file{record = ev}): no Lua string per line.
local weir = require("weir")
-- bench/common.lua, found by this file's directory (see there)
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
package.path = here .. "/?.lua;" .. package.path
local common = require("common")

local WINDOW_MS = 5000

local path = weir.args[1]
local variant = weir.args[2] or "find"
if not path then
  error("bench/text.lua: expected the path of the input file")
end
local VARIANTS = { match = true, find = true, c = true, json = true, json_lua = true }
if not VARIANTS[variant] then
  error(("bench/text.lua: expected match, find, c, json or json_lua, got %q"):format(variant))
end

local tonumber, find, sub = tonumber, string.find, string.sub
local parse
if variant == "match" then
  parse = function(line)
    local k, ts = line:match("^(%d+),(%d+)$")
    return { tonumber(k), tonumber(ts) }
  end
else
  parse = function(line)
    local c = find(line, ",", 1, true)
    return { tonumber(sub(line, 1, c - 1)), tonumber(sub(line, c + 1)) }
  end
end

-- The checksum sink's digest term of bench/windows.lua: the same input gives the same line.
local function digest_term(r)
  return (r.key + 1) * (r.start / WINDOW_MS + 1) * r.count
end

local env = weir.env{ parallelism = 1, auto_watermark_interval = common.WATERMARK_INTERVAL }

local events, event_key, event_ts
if variant == "c" then
  local ev = weir.record_type("ev", { "int32_t key", "double ts" })
  events = env:read_text_file(path, { record = ev })
  event_key = function(e) return e.key end
  event_ts = function(e) return e.ts end
elseif variant == "json" then
  local click = weir.record_type("click", { "int32_t key", "double ts", "string page" })
  events = env:read_text_file(path, { format = "json", record = click })
  event_key = function(e) return e.key end
  event_ts = function(e) return e.ts end
elseif variant == "json_lua" then
  events = env:read_text_file(path, { format = "json" })
  event_key = function(e) return e.key end
  event_ts = function(e) return e.ts end
else
  events = env:read_text_file(path):map(parse)
  event_key = function(e) return e[1] end
  event_ts = function(e) return e[2] end
end

events
  :assign_timestamps_and_watermarks(
    weir.watermarks.monotonous():with_timestamp_assigner(event_ts))
  :key_by(event_key)
  :window(weir.windows.tumbling_event_time("5s"))
  :aggregate(common.count(), function(key, ctx, counts, out)
    out({ key = key, start = ctx:window().start, count = counts[1] })
  end)
  :sink(common.checksum_sink(digest_term))

env:execute("bench text " .. variant)
