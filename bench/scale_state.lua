-- bench/scale_state.lua: what moving a partition's state costs on the wire (docs/SCALING.md):
-- through the state topic's C part (kafka_state.c, the same calls weir.scaleout makes), puts
-- one snapshot of SIZE bytes for each of P partitions and waits for the acknowledgements
-- (a hand-off's write), then reads each back (an assignment's read), R rounds per size; prints
-- per size the median seconds of the P writes and of one read, and the bytes per second.
--
--   weir run bench/scale_state.lua -- BOOTSTRAP_SERVERS STATE_TOPIC P R SIZE...
local weir = require("weir")
local ffi = require("ffi")
local C = require("weir.ffi")
pcall(ffi.cdef, [[
typedef struct { long sec; long nsec; } scale_state_ts;
int clock_gettime(int clk, scale_state_ts *ts);
]])
local ts = ffi.new("scale_state_ts")
local function now()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.sec) + tonumber(ts.nsec) / 1e9
end

local bs, topic, p, rounds = weir.args[1], weir.args[2], tonumber(weir.args[3]),
  tonumber(weir.args[4])
if not (bs and topic and p and rounds and weir.args[5]) then
  error("bench/scale_state.lua: expected BOOTSTRAP_SERVERS STATE_TOPIC P R SIZE...")
end
local err = ffi.new("char[512]")
local h = C.weir_kafka_state_open(bs, topic, p, ffi.new("const char *[1]"), 0, 30000, err, 512)
if h == nil then
  error("bench/scale_state.lua: " .. ffi.string(err))
end
local box = ffi.new("double[3]")
local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end
local id = 0
print(("%10s %3s %12s %12s %14s %14s"):format("bytes", "P", "write P s", "read 1 s",
  "write MB/s", "read MB/s"))
for i = 5, #weir.args do
  local size = assert(tonumber(weir.args[i]), "bench/scale_state.lua: SIZE is a byte count")
  local blob = string.rep("weir state ", math.ceil(size / 11)):sub(1, size)
  local writes, reads = {}, {}
  for _ = 1, rounds do
    id = id + 1
    local t0 = now()
    for part = 0, p - 1 do
      assert(C.weir_kafka_state_put(h, "in", part, id, blob, #blob) == 0,
        ffi.string(C.weir_kafka_state_error(h)))
    end
    assert(C.weir_kafka_state_flush(h, 60000) == 0, ffi.string(C.weir_kafka_state_error(h)))
    writes[#writes + 1] = now() - t0
    for part = 0, p - 1 do
      t0 = now()
      local got = C.weir_kafka_state_read1(h, "in", part, box)
      reads[#reads + 1] = now() - t0
      assert(got ~= nil and box[1] == size and box[0] == id, "bench/scale_state.lua: read back")
      C.weir_kafka_state_blob_free(got)
    end
  end
  local w, r = median(writes), median(reads)
  print(("%10d %3d %12.4f %12.4f %14.1f %14.1f"):format(size, p, w, r, size * p / w / 1e6,
    size / r / 1e6))
end
C.weir_kafka_state_close(h)
