-- write_text of a few lines into a full disk: they fit stdio's buffer, so only the close
-- writes them, and its failure fails the job.
local weir = require("weir")
local env = weir.env()
env:from_elements("a", "b", "c"):write_text("/dev/full", { overwrite = true })
env:execute()
