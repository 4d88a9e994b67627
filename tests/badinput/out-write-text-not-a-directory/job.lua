-- write_text at parallelism 2 under a path whose parent is a file: the job fails at start,
-- naming the directory and why.
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
env:from_elements(1, 2):write_text("job.lua/out")
env:execute()
