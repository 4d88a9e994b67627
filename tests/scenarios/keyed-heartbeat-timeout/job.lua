-- A heartbeat-timeout detector: a keyed process function with a processing-time timer per
-- device, moved on every heartbeat (delete the old timer, register now + 5s). A timer that
-- fires means the device was silent for 5 s; a heartbeat after that says it is back.
--
--   weir run job.lua --replay input.replay    (the socket is replaced by the replay)
local weir = require("weir")

local TIMEOUT = 5000
local env = weir.env()

env:socket_text_stream("localhost", 9999)
  :key_by(function(device) return device end)
  :process({
    open = function(self, rt)
      self.last = rt:value_state("last_seen")  -- processing time of the last heartbeat
      self.timer = rt:value_state("timer")     -- the pending timer's time
      self.missing = rt:value_state("missing") -- the timer that reported it missing
    end,
    process = function(self, device, ctx, out)
      local ts = ctx:timer_service()
      local now = ts:current_processing_time()
      local old = self.timer:value()
      if old then
        ts:delete_processing_time_timer(old)
      end
      local missing = self.missing:value()
      if missing then
        out(("back %s at %d (missing since timer %d)"):format(device, now, missing))
        self.missing:clear()
      end
      self.last:update(now)
      self.timer:update(now + TIMEOUT)
      ts:register_processing_time_timer(now + TIMEOUT)
    end,
    on_timer = function(self, t, ctx, out)
      out(("missed %s: last seen %d, timer %d, now %d"):format(ctx:current_key(),
        self.last:value(), t, ctx:timer_service():current_processing_time()))
      self.timer:clear()
      self.missing:update(t)
    end,
  })
  :print()

env:execute()
