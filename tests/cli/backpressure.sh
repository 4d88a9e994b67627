#!/usr/bin/env bash
# The idle-advance guard against backpressure, on a real socket: 500 records with increasing
# event times arrive at once; a sink stalls 1 s every 50 records, so records wait (in weir's
# buffer and the socket) while the clock runs. with_idle_advance("300ms") must not move the
# watermark while input is waiting: 0 late records, every window complete. The job's internal
# option weir.env{_quiet_guard = false} (given "noguard") removes the guard, and then late
# records appear -- so the guard is what makes the difference. A real-time test: about 10 s per run.
. "$(dirname "$0")/lib.bash"
SERVE="$BUILD/tcp_serve"

for i in $(seq 0 499); do echo "k,$((i * 10))"; done > records.txt

cat > bp.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ batch_size = 50, _quiet_guard = weir.args[2] ~= "noguard" }
local late = weir.output_tag("late")

local parsed = env:socket_text_stream("127.0.0.1", tonumber(weir.args[1]))
  :map(function(line)
    local k, ts = line:match("^(%w+),(%d+)$")
    return { k, tonumber(ts) }
  end)

parsed:sink({                                   -- the slow sink: 1 s every 50 records
  open = function(self) self.n = 0 end,
  sink = function(self)
    self.n = self.n + 1
    if self.n % 50 == 0 then os.execute("sleep 1") end
  end,
})

local counts = parsed
  :assign_timestamps_and_watermarks(weir.watermarks.bounded_out_of_orderness(0)
    :with_timestamp_assigner(function(e) return e[2] end)
    :with_idle_advance("300ms"))
  :key_by(function(e) return e[1] end)
  :window(weir.windows.tumbling_event_time(100))
  :side_output_late_data(late)
  :aggregate({ create = function() return 0 end, add = function(_, n) return n + 1 end,
               result = function(n) return n end })

local windows, complete, lates = 0, 0, 0
counts:sink(function(n)
  windows = windows + 1
  if n == 10 then complete = complete + 1 end
end)
counts:get_side_output(late):sink(function() lates = lates + 1 end)
env:execute()
print(("windows=%d complete=%d late=%d"):format(windows, complete, lates))
LUA

serve_and_run() {
  rm -f port; "$SERVE" port records.txt & srv=$!
  for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
  run_weir run bp.lua -- "$(cat port)" "$@"
  wait $srv
}

serve_and_run
expect_rc 0 "with the guard the job runs to the end"
expect_out "windows=50 complete=50 late=0" "with the guard: no late records, every window complete"

serve_and_run noguard
expect_rc 0 "without the guard the job runs to the end"
if grep -q "late=0$" out; then
  bad "without the guard late records should appear, got: $(cat out)"
else
  ok
fi

finish
