-- weir: the entry point (`local weir = require("weir")`); defines no globals.
local tag = require("weir.tag")
local env = require("weir.env")

local M = {}

local ok, job = pcall(require, "weir._job")
if not ok or type(job) ~= "table" then
  job = {}
end

---Arguments after `--` on the weir command line.
M.args = job.args or {}

---The absolute path of the job script's folder (in a REPL without a job: the working
---directory), for data files next to the job: weir.script_dir .. "/words.txt".
M.script_dir = job.script_dir

M.version = require("weir.ffi") and require("ffi").string(require("weir.ffi").weir_version())

---weir.param(name, default): a job parameter (--param NAME=VALUE), converted to default's type.
M.param = require("weir.param").get

---weir.env{ parallelism, max_parallelism, auto_watermark_interval, on_error, end_of_input }
M.env = env.new

---weir.output_tag(id): a side-output tag; tags with the same id are the same tag.
M.output_tag = tag.new

local triggers = require("weir.triggers")
local evictors = require("weir.evictors")

M.watermarks = require("weir.watermarks")
M.windows = require("weir.windows")
M.triggers = triggers
M.evictors = evictors
M.trigger = triggers.new
M.evictor = evictors.new
M.CONTINUE, M.FIRE, M.PURGE, M.FIRE_AND_PURGE = triggers.CONTINUE, triggers.FIRE,
  triggers.PURGE, triggers.FIRE_AND_PURGE

M.record_type = require("weir.records").record_type

---weir.aggregates: count(), sum(field), min(field), max(field), avg(field) for
---windowed:aggregate (computed in C on the fast window operator), and window_result, the
---record type their windows emit without a window function.
do
  local a = require("weir.aggregates")
  M.aggregates = { count = a.count, sum = a.sum, min = a.min, max = a.max, avg = a.avg,
                   window_result = a.window_result }
end

---weir.nexmark.bid: the record type of env:nexmark_bids (auction, bidder, price in cents, ts).
M.nexmark = { bid = require("weir.records").nexmark_bid }

M.format = require("weir.format").value

---weir.json: encode(v) -> JSON text, decode(s) -> value (or nil, message), null (API.md,
---Formats).
local json = require("weir.json")
M.json = { encode = json.encode, decode = json.decode, null = json.null }
M.null = json.null
M.duration = require("weir.duration").parse
M.key_group = function(key, n) return require("weir.scaleout").key_group(key, n) end

return M
