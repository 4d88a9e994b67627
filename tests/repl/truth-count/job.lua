-- The inspectors on a global window with a count trigger (issue 16 item 3): it waits for a
-- count, and says how many so far; :draw never prints nan or +inf .. +inf.
local weir = require("weir")
local env = weir.env()
env:manual()
  :key_by(function(line) return line end)
  :count_window(3)
  :apply(function(key, _, elements, out) out(("%s x%d"):format(key, #elements)) end)
  :print()
env:execute("counts")
