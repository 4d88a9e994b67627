-- weir.duration: "1h30m"-style text (or a number of milliseconds) to integer milliseconds.
local lpeg = require("lpeg")
local util = require("weir.util")

local M = {}

local UNIT_MS = { ms = 1, s = 1000, m = 60000, h = 3600000, d = 86400000 }
local digits = lpeg.R("09") ^ 1
local part = lpeg.Ct(lpeg.C(digits) * lpeg.C(lpeg.P("ms") + lpeg.S("smhd")))
local text = lpeg.C(lpeg.P("-") ^ -1) * (lpeg.Ct(part ^ 1) + lpeg.C(digits)) * -1

---Parses a duration: a number of milliseconds, or text such as "250ms", "5s", "1h30m".
---@param d number|string
---@param what string|nil  what the duration is for, named in the error
---Errors name the user's script line (the nearest caller outside weir).
---@return number milliseconds (an integer, may be negative only if the text says "-")
function M.parse(d, what)
  if type(d) == "number" then
    if d ~= d or d == math.huge or d == -math.huge or d ~= math.floor(d) then
      util.build_error("invalid duration %s%s: not a whole number of milliseconds",
        tostring(d), what and (" for " .. what) or "")
    end
    return d
  end
  local sign, parts
  if type(d) == "string" then
    sign, parts = text:match(d)
  end
  if not sign then
    util.build_error("invalid duration %q%s", tostring(d), what and (" for " .. what) or "")
  end
  local ms = 0
  if type(parts) == "string" then
    ms = tonumber(parts)
  else
    for i = 1, #parts do
      ms = ms + tonumber(parts[i][1]) * UNIT_MS[parts[i][2]]
    end
  end
  return sign == "-" and -ms or ms
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
