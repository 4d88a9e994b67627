-- weir.replay: parses the replay format (API.md, Replay format) into timed entries.
local lpeg = require("lpeg")
local duration = require("weir.duration")

local M = {}

local MAX_TIME = duration.MAX_TIME

local P, R, S, C, Cp = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cp
local digits = R("09") ^ 1
local dur = (digits * (P("ms") + S("smhd"))) ^ 1 + digits
local rest_start = P(" ") * Cp() + -1 * Cp()
-- A timing line: "@<digits>" or "+<duration>", then a space or the end of the line.
local absolute = P("@") * C(digits) * rest_start / function(t, pos) return "@", t, pos end
local relative = P("+") * C(dur) * rest_start / function(d, pos) return "+", d, pos end
local timing = absolute + relative
-- weir.duration's pattern too, now (it is made on first use), then the garbage of making them
-- is collected: LPeg's patterns have finalizers, and a finalizer that runs while LuaJIT records
-- a trace aborts the trace wherever it is (lj_gc.c, gc_call_finalizer: lj_trace_abort;
-- "error thrown or hook called during recording"), here in parse's loop over the lines. Once,
-- when the first replay loads this module.
duration.text_ms("0ms")
collectgarbage()

---Parses replay text. Returns a list of entries {time, offset, len, line} (offset is 0-based
---into text, len -1 for a time-only line) and the clock's start time.
---@param text string
---@param name string  file name for errors
---@return table entries, number start_ms
function M.parse(text, name)
  local entries = {}
  local now, start = 0, nil
  local line_no, pos, n = 0, 1, #text
  while pos <= n do
    local nl = text:find("\n", pos, true)
    local stop = nl and nl - 1 or n
    line_no = line_no + 1
    local line_end = stop
    if line_end >= pos and text:byte(line_end) == 13 then
      line_end = line_end - 1
    end
    local line = text:sub(pos, line_end)
    if line ~= "" and line:byte(1) ~= 35 then -- "#"
      local kind, t, rest = timing:match(line)
      local offset, len
      if kind then
        local at
        if kind == "@" then
          at = tonumber(t)
        else
          at = now + duration.text_ms(t)
        end
        -- beyond MAX_TIME a sum may round, but stays beyond it; below it, all is exact
        if at > MAX_TIME then
          error(("%s:%d: %s is beyond the time range: the clock can reach 2^52 ms (%d)")
            :format(name, line_no, line:match("^%S+"), MAX_TIME), 0)
        end
        if at < now then
          error(("%s:%d: time goes back (%s is before the clock's %d)")
            :format(name, line_no, line:match("^%S+"), now), 0)
        end
        if start == nil then
          start = kind == "@" and at or 0
        end
        now = at
        if rest <= #line then
          offset, len = pos - 1 + rest - 1, line_end - (pos - 1 + rest - 1)
        end
      else
        if start == nil then
          start = 0
        end
        local skip = line:byte(1) == 92 and 1 or 0 -- "\" escapes a record
        offset, len = pos - 1 + skip, line_end - (pos - 1) - skip
      end
      if offset and len > 0 then
        entries[#entries + 1] = { now, offset, len, line_no }
      elseif kind then
        entries[#entries + 1] = { now, 0, -1, line_no }
      end
    end
    pos = stop + 2
  end
  return entries, start or 0
end

return M
