-- A --param the job never reads (a misspelt name): a usage error before anything runs, naming
-- the parameter and the ones the job reads; no record goes in.
local weir = require("weir")
local env = weir.env()
local n = weir.param("repeat", 1)
env:from_collection({ 1, 2, 3 })
  :map(function(x) return "out " .. x * n end)
  :print()
env:execute("param")
