-- A record the JSON sink cannot write (NaN): the job fails naming the print sink, the value's
-- place in the record, and the record; what came before it was written.
local weir = require("weir")
local env = weir.env()
env:from_elements({ out = 1 }, { out = 0 / 0 }, { out = 3 }):print{ format = "json" }
env:execute()
