-- bench/common.lua: the record count argument, count aggregate and checksum sink of the windowed
-- benchmark jobs.
-- A job loads it by its own directory, since bench/ is not on weir's package.path (`source`,
-- not `short_src`, which cuts long paths to "..."):
--
--   local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
--   package.path = here .. "/?.lua;" .. package.path
--   local common = require("common")
local weir = require("weir")

local M = {}

local DIGEST_MOD = 4294967296 -- 2^32

-- The windowed jobs emit watermarks every 10 ms of wall-clock time instead of Flink's default
-- 200 ms. weir runs millions of events per 200 ms, so with the default a job holds the windows
-- of a second of input open (and out of the caches) before the next watermark closes them,
-- while the C baselines close a window as soon as their watermark passes it. 10 ms keeps
-- the state of the two programs comparable; the results are the same either way (the sink's
-- checksum does not depend on when windows fire).
M.WATERMARK_INTERVAL = "10ms"

---The job's record count: its first argument (`-- N`), or `default` without one.
---@param job string the job's path, for the error message: "bench/<name>.lua"
---@param default string the count when the job has no argument
---@return number n a non-negative integer; any other argument fails the job build
function M.record_count(job, default)
  local n = tonumber(weir.args[1] or default)
  if not n or n < 0 or n % 1 ~= 0 then
    error(("%s: expected a record count, got %q"):format(job, tostring(weir.args[1])), 2)
  end
  return n
end

---The aggregate every job runs: counts the events of a window. `merge` adds two counts, for
---session windows; the other window kinds never call it.
---@return table aggregate {create, add, result, merge}, for stream:aggregate()
function M.count()
  return {
    create = function() return 0 end,
    add = function(_, c) return c + 1 end,
    result = function(c) return c end,
    merge = function(a, b) return a + b end,
  }
end

---A sink that keeps an order-independent checksum of every fired window, so the output does
---not depend on when the periodic (wall-clock) watermarks happen to fire windows, and prints
---"<what> W events E digest D" at the end: W results, E = sum of their counts, D = sum of
---term(r) mod 2^32. Each term must be a non-negative integer exact in a double (< 2^53) so that
---the sum does not depend on the order results arrive in.
---@param term fun(r: table): number the digest term of one result (fields key, count, ...)
---@param what string|nil the word for a result in the output line, "windows" by default
---@param count_field string|nil the result's field that counts its events: "count" (default)
---  or "value" (weir.aggregates' window_result)
---@return table sink {open, sink, close}, for stream:sink()
function M.checksum_sink(term, what, count_field)
  local line = (what or "windows") .. " %d events %d digest %d"
  local cf = count_field or "count"
  return {
    open = function(self)
      self.windows = 0
      self.events = 0
      self.digest = 0
    end,
    sink = cf == "count" and function(self, r)
      self.windows = self.windows + 1
      self.events = self.events + r.count
      self.digest = (self.digest + term(r)) % DIGEST_MOD
    end or function(self, r)
      self.windows = self.windows + 1
      self.events = self.events + r.value -- the only other field a result counts in
      self.digest = (self.digest + term(r)) % DIGEST_MOD
    end,
    close = function(self)
      print(line:format(self.windows, self.events, self.digest))
    end,
  }
end

return M
