-- socket max_retry beyond int32_t: a build error.
local weir = require("weir")
local env = weir.env()
env:socket_text_stream("localhost", 9, { max_retry = 2 ^ 31 }):print()
env:execute("opt")
