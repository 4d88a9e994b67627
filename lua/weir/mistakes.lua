-- weir.mistakes: the build errors for everyday Lua slips with weir's objects, loaded only when
-- one happens: a name that is no method (with the nearest method and, for a method of another
-- kind of object, what to do), and a method called with a dot instead of a colon.
local util = require("weir.util")

local M = {}

local function edit_distance(a, b)
  local prev = {}
  for j = 0, #b do
    prev[j] = j
  end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end
M.edit_distance = edit_distance

---The closest method name in the tables (at most 2 edits, fewer for short names), or nil.
function M.closest(k, tables)
  local best, best_d
  for _, t in ipairs(tables) do
    for name, v in pairs(t) do
      if type(v) == "function" and type(name) == "string" and name:sub(1, 1) ~= "_" then
        local d = edit_distance(k, name)
        if d <= math.min(2, math.floor(#k / 3)) and (not best_d or d < best_d
            or d == best_d and name < best) then
          best, best_d = name, d
        end
      end
    end
  end
  return best
end

local WINDOW_FNS = "reduce, aggregate, process or apply"

---A sentence for k when it is a method of another kind of object than what, or nil.
local function hint(what, k)
  local stream = require("weir.stream")
  local Stream, Keyed, Windowed = stream.Stream, stream.Keyed, stream.Windowed
  local is_stream = rawget(Stream, k) ~= nil or rawget(Keyed, k) ~= nil
  if what == "WindowedStream" then
    if is_stream then
      return ("a windowed stream needs a window function (%s) before %s"):format(WINDOW_FNS, k)
    end
  elseif what == "Sink" then
    if is_stream then
      return "a sink ends its pipeline; to send a stream to two places, keep the stream in a "
        .. "local and call both on it"
    end
  elseif rawget(Keyed, k) ~= nil then
    return ("%s applies to a keyed stream: key_by(...) first%s"):format(k,
      k == "window" and ", or window_all(...) for one window over the whole stream" or "")
  elseif rawget(Windowed, k) ~= nil then
    return ("%s applies to a windowed stream: key_by(...):window(...) first"):format(k)
  elseif rawget(require("weir.env").Env, k) ~= nil then
    return ("%s is a method of the environment: env:%s(...)"):format(k, k)
  end
end

---Raises "<line>: KeyedStream has no method 'windw' (did you mean window?)[; hint]".
function M.no_method(what, k, tables)
  local near = M.closest(k, tables)
  local why = hint(what, k)
  util.build_error("%s has no method '%s'%s%s", what, k,
    near and (" (did you mean %s?)"):format(near) or "", why and ("; " .. why) or "")
end

---For a name read from the environment that is not set: raises when it is within two edits of
---an environment method, or is a stream method; returns when it is a plain unset field.
function M.env_name(Env, k)
  local near = M.closest(k, { Env })
  if near then
    util.build_error("StreamExecutionEnvironment has no method '%s' (did you mean %s?)", k,
      near)
  end
  local stream = require("weir.stream")
  if k ~= "name" and (rawget(stream.Stream, k) or rawget(stream.Keyed, k)) then
    util.build_error("StreamExecutionEnvironment has no method '%s'; %s is a stream method: "
      .. "start from a source (env:from_elements(...), env:read_text_file(...), ...)", k, k)
  end
end

local WHAT = { ["@weir/env.lua"] = "env", ["@weir/stream.lua"] = "stream" }

---A method called with a dot (`env.from_elements(1)`): Lua passed the first argument as self,
---and the method failed indexing it inside weir. Given such an error message, from a handler
---running at the failing frame, returns "<user line>: from_elements called with a dot:
---env:from_elements(...) needs a colon ...", or nil when the error is something else.
function M.dot_call(msg)
  if type(msg) ~= "string" or not msg:match("^weir/[%w_]+%.lua:%d+: attempt to index local "
      .. "'self' %(a %w+ value%)$") then
    return nil
  end
  -- the outermost weir frame, the one user code called: its name is the method's
  local name, what
  for level = 3, 60 do
    local info = debug.getinfo(level, "Sn")
    if not info then
      break
    end
    if info.source:sub(1, 6) == "@weir/" then
      name, what = info.name, WHAT[info.source]
    elseif name then
      break
    end
  end
  if not name or not what then
    return nil
  end
  return ("%s: %s called with a dot: %s:%s(...) needs a colon (Lua passes the object as "
    .. "self)"):format(util.callsite(), name, what, name)
end

---" (called with a dot? stream:map(...) needs a colon)" when the method user code called got
---a self that is no weir object, i.e. was called with a dot; "" otherwise. For the argument
---checks, whose message would otherwise only say that an argument is missing.
function M.dot_hint()
  local objects = {}
  local stream = require("weir.stream")
  for _, c in ipairs({ stream.Stream, stream.Keyed, stream.Windowed, stream.Sink,
      require("weir.env").Env }) do
    objects[c] = true
  end
  local found
  for level = 3, 60 do
    local info = debug.getinfo(level, "Sn")
    if not info then
      break
    end
    if info.source:sub(1, 6) == "@weir/" then
      found = { level = level, name = info.name, what = WHAT[info.source] }
    elseif found then
      break
    end
  end
  if not found or not found.name or not found.what then
    return ""
  end
  local local_name, self = debug.getlocal(found.level, 1)
  if local_name ~= "self" or objects[getmetatable(self)] then
    return ""
  end
  return (" (called with a dot? %s:%s(...) needs a colon)"):format(found.what, found.name)
end

return M
