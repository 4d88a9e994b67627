-- An interval join with both bounds exclusive, at parallelism 2: a right record r joins a
-- left record l of its key when l.ts < r.ts < l.ts + 2000 (Flink moves exclusive bounds by
-- 1 ms: [l.ts + 1, l.ts + 1999]). A right record matching several left timestamps emits them
-- in ascending order; each pair carries max(l.ts, r.ts). The join's watermark is the minimum
-- of the two inputs' (monotonous: max - 1); a left record behind it is late, dropped and
-- reported on stderr at the end.
local weir = require("weir")

local env = weir.env()
local lines = env:socket_text_stream("localhost", 9999)

local function side(tag)
  return lines
    :filter(function(line) return line:sub(1, 1) == tag end)
    :map(function(line)
      local key, t = line:match("^%a (%a+) (%d+)$")
      return { key = key, ts = tonumber(t) }
    end)
    :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
      :with_timestamp_assigner(function(e) return e.ts end))
    :key_by(function(e) return e.key end)
end

side("L"):interval_join(side("R")):between(0, "2s")
  :lower_bound_exclusive():upper_bound_exclusive()
  :process(function(l, r, ctx, out)
    out(("%s: L%d R%d @%d (left %d, right %d)"):format(l.key, l.ts, r.ts, ctx:timestamp(),
      ctx:left_timestamp(), ctx:right_timestamp()))
  end)
  :set_parallelism(2)
  :print()
  :set_parallelism(2)

env:execute()
