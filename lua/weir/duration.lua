-- weir.duration: "1h30m"-style text (or a number of milliseconds) to integer milliseconds, and
-- weir's time range (API.md, Time range).
local util = require("weir.util")

local M = {}

-- The time range. Timestamps and clock readings are whole milliseconds within +-MAX_TIME, and
-- durations at most MAX_DURATION. Then every time weir derives from them stays a whole number
-- within +-MAX_EXACT, where a double holds every integer exactly: a window's start (at least
-- timestamp - slide - offset) and stop (at most timestamp + size), its max timestamp and its
-- cleanup time (max timestamp + lateness), a watermark (timestamp - delay - 1), a session's
-- stop (timestamp + gap), a processing-time window's bounds; so the general and the fast
-- window operator compute the same times, and C (runtime/ms.h) converts them without rounding.
-- Times a user function hands weir (timer times, custom watermarks) may use all of +-MAX_EXACT.
M.MAX_TIME = 2 ^ 52
M.MAX_DURATION = 2 ^ 51
M.MAX_EXACT = 2 ^ 53
local MAX_DURATION = M.MAX_DURATION

local UNIT_MS = { ms = 1, s = 1000, m = 60000, h = 3600000, d = 86400000 }
-- The pattern of duration text, made on the first text parsed: a job that writes none (or only
-- numbers) never loads lpeg (~0.15 ms of start-up).
local text
local function text_pattern()
  local lpeg = require("lpeg")
  local digits = lpeg.R("09") ^ 1
  local part = lpeg.Ct(lpeg.C(digits) * lpeg.C(lpeg.P("ms") + lpeg.S("smhd")))
  text = lpeg.C(lpeg.P("-") ^ -1) * (lpeg.Ct(part ^ 1) + lpeg.C(digits)) * -1
  return text
end

---A value for an error message: a number exactly (tostring's 14 digits when they say it, else
---17), a string quoted and cut, anything else by its type.
---@return string
function M.show(v)
  local tv = type(v)
  if tv == "number" then
    local s = tostring(v)
    if v == v and tonumber(s) ~= v then
      s = ("%.17g"):format(v)
    end
    return s
  elseif tv == "string" then
    if #v > 60 then
      return ("the string %q..."):format(v:sub(1, 60))
    end
    return ("the string %q"):format(v)
  elseif tv == "boolean" then
    return "the boolean " .. tostring(v)
  elseif tv == "nil" then
    return "nil"
  end
  return "a " .. tv
end

---A span of milliseconds (>= 0) for people: "850ms", "4.2s", "3m 07s", "5h 02m", "902d 03h".
---@return string
function M.human(ms)
  if ms ~= ms or ms == math.huge then
    return tostring(ms)
  end
  ms = math.floor(ms + 0.5)
  if ms < 1000 then
    return ("%dms"):format(ms)
  elseif ms < 60000 then
    return ("%.1fs"):format(math.floor(ms / 100) / 10)
  end
  local s = math.floor(ms / 1000)
  if s < 3600 then
    return ("%dm %02ds"):format(math.floor(s / 60), s % 60)
  elseif s < 86400 then
    return ("%dh %02dm"):format(math.floor(s / 3600), math.floor(s / 60) % 60)
  end
  return ("%dd %02dh"):format(math.floor(s / 86400), math.floor(s / 3600) % 24)
end

---Why t is not a time within +-limit ("2^52": the limit's name), or nil when it is one.
---@return string|nil
function M.time_problem(t, limit, limit_name)
  if type(t) ~= "number" or t ~= t then
    return "not a number of milliseconds"
  end
  if t > limit or t < -limit then
    return ("outside the time range [-%s, %s] ms"):format(limit_name, limit_name)
  end
  if t % 1 ~= 0 then
    return "not a whole number of milliseconds"
  end
  return nil
end

---The milliseconds of duration text (nil when it is not duration text): a sum of parts, each
---exact below 2^53; a sum beyond MAX_DURATION may round, but stays beyond it.
---@return number|nil
function M.text_ms(s)
  local sign, parts = (text or text_pattern()):match(s)
  if not sign then
    return nil
  end
  local ms = 0
  if type(parts) == "string" then
    ms = tonumber(parts)
  elseif #parts == 1 then -- "5s": no loop (a replay parses one per line; LuaJIT would trace it)
    ms = tonumber(parts[1][1]) * UNIT_MS[parts[1][2]]
  else
    for i = 1, #parts do
      ms = ms + tonumber(parts[i][1]) * UNIT_MS[parts[i][2]]
    end
  end
  return sign == "-" and -ms or ms
end

---Parses a duration: a number of milliseconds, or text such as "250ms", "5s", "1h30m".
---@param d number|string
---@param what string|nil  what the duration is for, named in the error
---Errors name the user's script line (the nearest caller outside weir).
---@return number milliseconds (a whole number of at most MAX_DURATION in absolute value, may be
---negative only if the text says "-")
function M.parse(d, what)
  local ms
  if type(d) == "number" then
    if d ~= d or d == math.huge or d == -math.huge or d ~= math.floor(d) then
      util.build_error("invalid duration %s%s: not a whole number of milliseconds",
        M.show(d), what and (" for " .. what) or "")
    end
    ms = d
  elseif type(d) == "string" then
    ms = M.text_ms(d)
  end
  if not ms then
    local for_what = what and (" for " .. what) or ""
    if d == nil then
      util.build_error("missing duration%s: expected a number of milliseconds or text such as "
        .. "\"5s\"", for_what)
    elseif type(d) ~= "string" then
      util.build_error("invalid duration%s: expected a number of milliseconds or text such as "
        .. "\"5s\", got %s", for_what, M.show(d))
    end
    local whole, frac, unit = d:match("^%-?(%d*)%.(%d+)(%a+)$")
    if whole and UNIT_MS[unit] then
      local v = (tonumber(whole ~= "" and whole or "0") + tonumber("0." .. frac)) * UNIT_MS[unit]
      if v == math.floor(v) then
        util.build_error("invalid duration %q%s: parts are whole numbers; write \"%s%dms\"", d,
          for_what, d:sub(1, 1) == "-" and "-" or "", v)
      end
    end
    util.build_error("invalid duration %q%s: expected whole numbers with units ms, s, m, h or d "
      .. "(\"250ms\", \"5s\", \"1h30m\") or bare digits for milliseconds", d, for_what)
  end
  if ms > MAX_DURATION or ms < -MAX_DURATION then
    util.build_error("invalid duration %s%s: beyond the longest duration, 2^51 ms (%d ms, "
      .. "about 71,000 years)", type(d) == "string" and ("%q"):format(d) or M.show(d),
      what and (" for " .. what) or "", MAX_DURATION)
  end
  return ms
end

---Like parse, but the result must be >= 0 (> 0 when positive is true).
---@return number
function M.parse_nonneg(d, what, positive)
  local ms = M.parse(d, what)
  if ms < 0 or (positive and ms == 0) then
    util.build_error("invalid duration %s for %s: must be %s",
      type(d) == "string" and ("%q"):format(d) or tostring(d), what or "it",
      positive and "greater than 0" or "at least 0")
  end
  return ms
end

return M
