-- kill -9 loop job (tests/ckpt): rich functions whose state is kept by snapshot_state /
-- restore_state (a running count and sum per subtask, and a table of counts per key), at
-- parallelism 2 behind a rebalance, into write_text. A lost or repeated record changes every
-- later line of its subtask.
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
env:read_text_file("in.txt")
  :map(function(l)
    local k, ts, v = l:match("^(%S+) (%d+) (%d+)$")
    return { k, tonumber(ts), tonumber(v) }
  end):set_parallelism(1):uid("parse")
  :rebalance()
  :map({
    open = function(self) -- after restore_state (Flink's initializeState, then open)
      if not self.n then self.n, self.sum, self.per_key = 0, 0, {} end
    end,
    map = function(self, e)
      self.n = self.n + 1
      self.sum = self.sum + e[3]
      self.per_key[e[1]] = (self.per_key[e[1]] or 0) + 1
      return ("%s %d n=%d sum=%d key=%d"):format(e[1], e[3], self.n, self.sum, self.per_key[e[1]])
    end,
    snapshot_state = function(self)
      return { n = self.n, sum = self.sum, per_key = self.per_key }
    end,
    restore_state = function(self, values)
      local s = values[1]
      self.n, self.sum, self.per_key = s.n, s.sum, s.per_key
    end,
  }):uid("count")
  :write_text("out"):uid("out")
env:execute("kill-file-rich")
