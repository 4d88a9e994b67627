-- write_text at parallelism 2 into a directory whose name starts with "-" (once read as a
-- mkdir option): weir creates it, parents too, without a shell. The job then reads the files
-- back and prints every line as "out ...".
local weir = require("weir")
local env = weir.env{ parallelism = 2 }
env:from_collection({ 1, 2, 3, 4, 5, 6, 7 }):rebalance():write_text("-p/sub", { overwrite = true })
env:execute()
for st = 1, 2 do
  for line in io.lines("-p/sub/" .. st) do
    print("out " .. line)
  end
  os.remove("-p/sub/" .. st)
end
os.remove("-p/sub")
os.remove("-p")
