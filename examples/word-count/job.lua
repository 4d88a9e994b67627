-- Word count over a text file: a running count per word, printed as (word,count).
--
--   weir run examples/word-count/job.lua                 reads words.txt next to this file
--   weir run examples/word-count/job.lua -- other.txt    reads another file
--
-- key_by sends every occurrence of a word to the same parallel subtask (Flink's key groups),
-- so a plain per-subtask table is enough to count it. The N> prefix names that subtask.
local weir = require("weir")

-- weir.script_dir is this file's folder, so words.txt is found from any working directory
local path = weir.args[1] or (weir.script_dir .. "/words.txt")

local env = weir.env{ parallelism = 2 }

env:read_text_file(path)
  :flat_map(function(line, out)
    for word in line:lower():gmatch("%a+") do
      out(word)
    end
  end)
  :key_by(function(word) return word end)
  :map({
    open = function(self) self.counts = {} end,    -- one table per subtask
    map = function(self, word)
      local n = (self.counts[word] or 0) + 1
      self.counts[word] = n
      return { word, n }
    end,
  })
  :print()

env:execute("word count")
