-- A REPL session's job on the virtual clock, to move the clock towards the end of the time range.
local weir = require("weir")
local env = weir.env()
env:manual()
  :map(function(line) return "got " .. line end)
  :print()
env:execute("repl time range")
