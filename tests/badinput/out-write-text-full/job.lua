-- write_text into a full disk (/dev/full): the first write stdio passes on fails (ENOSPC),
-- and the job fails naming the sink and the file, instead of exiting 0 with nothing written.
local weir = require("weir")
local env = weir.env()
env:generate(function(i) return "line " .. i end, { count = 100000 })
  :write_text("/dev/full", { overwrite = true })
env:execute()
