-- weir.format: how values print (API.md, Sinks) and Flink's print-sink prefix.
local M = {}

local tostring, type, format, floor = tostring, type, string.format, math.floor
local concat, sort = table.concat, table.sort

local function number_text(v)
  if v == floor(v) and v > -1e21 and v < 1e21 then
    local s = format("%.0f", v)
    return s -- not tail calls: see weir.codegen, "Tail calls"
  end
  local s = format("%.14g", v)
  return s
end

local function key_before(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then
    return ta == "number"
  end
  if ta == "number" or ta == "string" then
    return a < b
  end
  return tostring(a) < tostring(b)
end

local value_text, table_body
local seen = {} -- tables being printed: a table that contains itself prints as "..."

local function is_sequence(t)
  local n = #t
  if n == 0 then
    return next(t) == nil
  end
  local count = 0
  for _ in pairs(t) do
    count = count + 1
  end
  return count == n
end

local function table_text(t)
  local mt = getmetatable(t)
  if mt and mt.__tostring then
    local s = tostring(t) -- not a tail call: see weir.codegen, "Tail calls"
    return s
  end
  if seen[t] then
    return "..."
  end
  seen[t] = true
  local text = table_body(t)
  seen[t] = nil
  return text
end

function table_body(t)
  if is_sequence(t) then
    local parts = {}
    for i = 1, #t do
      parts[i] = value_text(t[i])
    end
    return "(" .. concat(parts, ",") .. ")"
  end
  local keys = {}
  for k in pairs(t) do
    keys[#keys + 1] = k
  end
  sort(keys, key_before)
  local parts = {}
  for i = 1, #keys do
    local k = keys[i]
    parts[i] = value_text(k) .. "=" .. value_text(t[k])
  end
  return "{" .. concat(parts, ", ") .. "}"
end

---The text a print sink writes for v (without prefix or newline).
---@param v any
---@return string
function value_text(v)
  local tv = type(v)
  if tv == "string" then
    return v
  elseif tv == "number" then
    return number_text(v)
  elseif tv == "table" then
    return table_text(v)
  elseif tv == "nil" then
    return "null"
  end
  local s = tostring(v) -- cdata and the rest; not a tail call: weir.codegen, "Tail calls"
  return s
end

---The text of v; also the entry point that forgets tables left marked by a failed call.
function M.value(v)
  if next(seen) ~= nil then
    seen = {}
  end
  return value_text(v)
end

---For error messages: the text of v cut to `cut` bytes (a string quoted), and never an error,
---whatever v's __tostring does (the error path must not fail).
---@param v any
---@param cut integer
---@return string
function M.brief(v, cut)
  local ok, s = pcall(M.value, v)
  if not ok or type(s) ~= "string" then
    ok, s = pcall(tostring, v)
    if not ok or type(s) ~= "string" then
      s = "(a " .. type(v) .. " that cannot be shown)"
    end
  end
  if #s > cut then
    s = s:sub(1, cut) .. "..."
  end
  if type(v) == "string" then
    return (("%q"):format(s):gsub("\\\n", "\\n"))
  end
  return s
end

---Flink's PrintSinkOutputWriter prefix: "id:N> ", "N> ", "id> " or "".
---@param id string|nil
---@param subtask integer 0-based
---@param parallelism integer
---@return string
function M.prefix(id, subtask, parallelism)
  local p = id or ""
  if parallelism > 1 then
    p = p .. (p ~= "" and ":" or "") .. tostring(subtask + 1)
  end
  if p ~= "" then
    p = p .. "> "
  end
  return p
end

return M
