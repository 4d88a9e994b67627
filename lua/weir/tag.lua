-- weir.tag: output tags for side outputs (Flink's OutputTag: equality by id).
local M = {}

local Tag = {}
Tag.__index = Tag
Tag.__tostring = function(t)
  return "OutputTag(" .. t.id .. ")"
end

local by_id = {}

---@param id string
function M.new(id)
  if type(id) ~= "string" or id == "" then
    error("output_tag: the id must be a non-empty string", 2)
  end
  -- Tags compare by id (as in Flink), so the same id gives the same tag object.
  local t = by_id[id]
  if not t then
    t = setmetatable({ id = id }, Tag)
    by_id[id] = t
  end
  return t
end

function M.is_tag(t)
  return getmetatable(t) == Tag
end

return M
