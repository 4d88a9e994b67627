-- weir.repl_words: the words the REPL's Tab completion offers (weir_repl_set_words): the
-- commands, the names at the prompt (the session's globals, `weir`'s documented API, a few
-- standard libraries) with their fields and methods, and every stream's `:method`. Built again
-- at each prompt, so that what the last line defined is offered.
local M = {}

-- Fields that are weir's own plumbing, not the documented API: never offered by completion.
-- (`window` is not: keyed:window(assigner) is a stream method.)
local HIDDEN = {
  add_node = true, window_start = true, valid_result = true, new = true,
  emitter = true, generator = true, format = true, duration = true,
}

-- A name worth offering: no metamethod or private `_name`.
local function shown(name)
  return type(name) == "string" and name:match("^[%a][%w_]*$") ~= nil
end

-- A name of weir's own API worth offering: documented, not plumbing.
local function public(name)
  return shown(name) and not HIDDEN[name] and not name:match("^is_")
end

-- The methods a value answers (its metatable's __index chain), sorted.
local function methods(v)
  local mt = getmetatable(v)
  local t = type(mt) == "table" and mt.__index
  local list, seen = {}, {}
  while type(t) == "table" do
    for k, f in pairs(t) do
      if type(f) == "function" and public(k) and not seen[k] then
        seen[k] = true
        list[#list + 1] = k
      end
    end
    local up = getmetatable(t)
    t = type(up) == "table" and up.__index or nil
  end
  table.sort(list)
  return list
end

local STREAM_METHODS -- `:method` after an expression: every stream's methods
local function stream_methods()
  if not STREAM_METHODS then
    local stream, seen = require("weir.stream"), {}
    STREAM_METHODS = {}
    for _, class in ipairs({ stream.Stream, stream.Keyed, stream.Windowed, stream.Sink }) do
      for _, m in ipairs(methods(setmetatable({}, class))) do
        if not seen[m] then
          seen[m] = true
          STREAM_METHODS[#STREAM_METHODS + 1] = ":" .. m
        end
      end
    end
  end
  return STREAM_METHODS
end

---The words for weir_repl_set_words, "\0"-separated: the command names (a list), then the
---names of globals (the prompt's environment, over _G) with their fields and methods.
function M.words(commands, globals)
  -- three sections (weir_repl_set_words): first word of a line only, anywhere, not first
  local words = {}
  for _, c in ipairs(commands) do
    words[#words + 1] = c
  end
  words[#words + 1] = ""
  local function add_fields(prefix, t, depth, ok)
    if depth > 2 or type(t) ~= "table" then
      return
    end
    for k, v in pairs(t) do
      if ok(k) then
        words[#words + 1] = prefix .. "." .. k
        if type(v) == "table" and getmetatable(v) == nil then
          add_fields(prefix .. "." .. k, v, depth + 1, ok)
        end
      end
    end
  end
  local function add_value(name, v)
    words[#words + 1] = name
    if type(v) == "table" and getmetatable(v) == nil and name ~= "_G" then
      add_fields(name, v, 2, shown)
    end
    for _, m in ipairs(methods(v)) do
      words[#words + 1] = name .. ":" .. m
    end
  end
  for k, v in pairs(globals) do
    if shown(k) and k ~= "weir" then
      add_value(k, v)
    end
  end
  for k in pairs(_G) do
    if shown(k) and rawget(globals, k) == nil then
      words[#words + 1] = k
    end
  end
  words[#words + 1] = "weir"
  add_fields("weir", require("weir"), 1, public)
  for _, lib in ipairs({ "string", "table", "math", "io", "os" }) do
    add_fields(lib, _G[lib], 2, shown)
  end
  words[#words + 1] = ""
  for _, m in ipairs(stream_methods()) do
    words[#words + 1] = m
  end
  return table.concat(words, "\0")
end

return M
