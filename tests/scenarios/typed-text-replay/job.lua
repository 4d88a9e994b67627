-- A typed text source (read_text_file{record = ...}) under --replay: the replay's lines are
-- parsed into the same records, and a malformed line is an error naming its line, as with C
-- parsing.
local weir = require("weir")

local ev = weir.record_type("ev", { "int32_t key", "double ts" })
local errors = weir.output_tag("errors")
local env = weir.env{ on_error = errors }

local events = env:read_text_file("events.csv", { record = ev })
events:print("ok")
events:get_side_output(errors)
  :map(function(e) return { e.value, e.error } end)
  :print("bad")

env:execute()
