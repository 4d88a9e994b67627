-- A map whose pattern did not match returns {nil, nil}; the key selector then fails. The error
-- names the key_by call's own line (not the window's) and shows the record as an empty table.
local weir = require("weir")
local env = weir.env()
env:from_elements("s1,10", "s1,x")
  :map(function(l) local k, v = l:match("^(%w+),(%d+)$") return { k, tonumber(v) } end)
  :key_by(function(r) return r[1] end)
  :window(weir.windows.global())
  :trigger(weir.triggers.count(1))
  :process(function(_, _, els, out) out("out " .. #els) end)
  :print()
env:execute()
