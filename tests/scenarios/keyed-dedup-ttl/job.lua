-- Deduplication with a TTL'd value state: the first event of each id passes, a repeat within
-- 10 s of processing time (Flink's StateTtlConfig: the time to live counts from the write, so
-- repeats do not extend it) goes to the "dup" side output; once the state expired, the id
-- passes again.
--
--   weir run job.lua --replay input.replay    (the socket is replaced by the replay)
local weir = require("weir")

local env = weir.env()
local dups = weir.output_tag("dup")

local kept = env:socket_text_stream("localhost", 9999)
  :key_by(function(line) return line:match("^(%S+)") end)
  :process({
    open = function(self, rt)
      self.seen = rt:value_state("seen", { ttl = "10s" })
    end,
    process = function(self, line, ctx, out)
      local first = self.seen:value()
      if first then
        ctx:output(dups, ("%s (id first seen at %d)"):format(line, first))
      else
        self.seen:update(ctx:current_processing_time())
        out(line)
      end
    end,
  })
kept:print("kept")
kept:get_side_output(dups):print("dup")

env:execute()
