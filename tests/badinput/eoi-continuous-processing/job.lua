-- A continuous processing-time trigger registers its next timer at every fire; at the end of
-- input weir fires what is pending and must then end, not fire forever.
local weir = require("weir")
local env = weir.env()
env:from_elements("a", "b", "a")
  :key_by(function(v) return v end)
  :window(weir.windows.global())
  :trigger(weir.triggers.continuous_processing_time("1s"))
  :process(function(_, _, els, out) out(#els) end)
  :map(function(n) return "out:" .. n end)
  :print()
env:execute()
