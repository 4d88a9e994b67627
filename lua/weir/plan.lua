-- weir.plan: resolves the job graph: parallelism, partitioning and channels of every edge,
-- consumers of every output, chaining, and the --replay substitution. Used by run and explain.
-- Set-up and report code, run once per job (or per status request): never traced, so that a
-- one-off loop LuaJIT's shared hot counters make look hot cannot abort a trace (weir.codegen).
jit.off(true, true)
local C = require("weir.ffi")

local M = {}

local TEXT_SOURCES = { file = true, stdin = true, socket = true, replay = true, manual = true }

local function describe_source(node)
  local k = node.source
  if k == "file" then
    return "read_text_file " .. node.path
  elseif k == "socket" then
    return ("socket_text_stream %s:%d"):format(node.host, node.port)
  elseif k == "replay" then
    return "replay " .. node.path
  elseif k == "manual" then
    return "manual"
  elseif k == "elements" then
    return ("from_elements (%d)"):format(node.count)
  elseif k == "generate" then
    local parts = {}
    if node.count >= 0 then
      parts[#parts + 1] = "count " .. node.count
    end
    if node.rate > 0 then
      parts[#parts + 1] = "rate " .. node.rate .. "/s"
    end
    return "generate" .. (#parts > 0 and (" (" .. table.concat(parts, ", ") .. ")") or "")
  elseif k == "nexmark" then
    return "nexmark_bids" .. (node.count >= 0 and (" (count " .. node.count .. ")") or "")
  end
  return k
end
M.describe_source = describe_source

---A short label for an operator, used in errors and explain: "map (job.lua:12)".
function M.label(node)
  if node.name then
    return node.name
  end
  if node.kind == "source" then
    return describe_source(node)
  end
  local kind = node.kind == "sink" and (node.sink == "fn" and "sink" or node.sink) or node.kind
  if node.kind == "sink" and node.sink == "print" and node.fd == 2 then
    kind = "print_to_err"
  elseif node.kind == "timestamps" then
    kind = "assign_timestamps_and_watermarks"
  elseif node.kind == "rolling" then
    kind = node.rolling_call
  elseif node.kind == "window" then
    kind = ("%s %s %s"):format(node.window_call, node.assigner.name, node.fn_kind)
  end
  return ("%s (%s)"):format(kind, node.callsite)
end

local function plan_error(fmt, ...)
  error({ usage = true, msg = fmt:format(...) }, 0)
end

---"the job has no text source (...)" or "the job has 2: read_text_file a; stdin", for the
---usage errors of --manual and --replay.
local function text_sources(text)
  if #text == 0 then
    return "the job has no text source (read_text_file, stdin, socket_text_stream, replay or "
      .. "manual)"
  end
  local names = {}
  for i, s in ipairs(text) do
    names[i] = describe_source(s)
  end
  return ("the job has %d: %s"):format(#text, table.concat(names, "; "))
end

---weir repl --manual: the job's single text source becomes the manual source.
local function substitute_manual(env)
  local text = {}
  for _, s in ipairs(env.sources) do
    if TEXT_SOURCES[s.source] then
      text[#text + 1] = s
    end
  end
  if #text ~= 1 then
    plan_error("--manual replaces the job's single text source, but %s", text_sources(text))
  end
  local s = text[1]
  if s.source ~= "manual" then
    s.replaced = describe_source(s)
    s.source = "manual"
  end
end

local function substitute_replay(env, path)
  local text = {}
  for _, s in ipairs(env.sources) do
    if TEXT_SOURCES[s.source] then
      text[#text + 1] = s
    end
  end
  if #text ~= 1 then
    plan_error("--replay replaces the job's single text source, but %s", text_sources(text))
  end
  local s = text[1]
  s.replaced = describe_source(s)
  s.source = "replay"
  s.path = path
end

---A job's input files must open before it runs; a missing one is a build error naming the
---script line and where a relative path was looked for (the working directory), with a hint
---when the job's folder has that file. Not under explain, which opens nothing.
local function check_files(env)
  local job = env.job
  if job.mode == "explain" then
    return
  end
  for _, s in ipairs(env.sources) do
    if (s.source == "file" or s.source == "replay") and not s.replaced then
      local fh, err = io.open(s.path, "rb")
      if fh then
        fh:close()
      else
        local call = s.source == "file" and "read_text_file" or "replay"
        local why = tostring(err):gsub("^.*: ", "")
        local text = ("%s: %s %q: %s"):format(s.callsite or "?", call, s.path, why)
        if s.path:sub(1, 1) ~= "/" then
          local dir = job.script_dir
          local there = dir and io.open(dir .. "/" .. s.path, "rb")
          if there then
            there:close()
            text = text .. (" (looked in the working directory, %s; the job's folder has it: "
              .. "use weir.script_dir .. %q)"):format(job.cwd or ".", "/" .. s.path)
          else
            text = text .. (" (looked in the working directory, %s%s)"):format(job.cwd or ".",
              dir and ("; weir.script_dir names the job's folder, " .. dir) or "")
          end
        end
        error(text, 0)
      end
    end
  end
end

---@param env table  the environment (weir.env)
---@return table plan
function M.build(env)
  local nodes = env.nodes
  if #env.sources == 0 then
    error(("%s: the job has no sources"):format(env.job.script or "job"), 0)
  end
  if env.job.replay then
    substitute_replay(env, env.job.replay)
  end
  if env.job.manual then
    substitute_manual(env)
  end
  check_files(env)
  for _, n in ipairs(nodes) do
    n.parallelism = n.parallelism or env.parallelism
    n.consumers = {}
    n.label = M.label(n)
  end
  for _, d in ipairs(nodes) do
    local offset = 0
    for k, port in ipairs(d.inputs) do
      local u = port.node
      local part = port.partition
      if not part then
        part = u.parallelism == d.parallelism and "forward" or "rebalance"
      end
      port.mode = part
      port.channels = part == "forward" and 1 or u.parallelism
      port.offset = offset
      offset = offset + port.channels
      u.consumers[#u.consumers + 1] = { node = d, port = k, tag = port.tag }
    end
    d.channels = offset
    if d.parallelism > 1 or d.inputs[1] and d.inputs[1].mode == "hash" then
      local maxp = env.max_parallelism or C.weir_keygroup_default_max_parallelism(d.parallelism)
      if d.parallelism > maxp then
        error(("%s: parallelism %d is above max_parallelism %d"):format(
          d.label, d.parallelism, maxp), 0)
      end
      d.max_parallelism = maxp
    end
    -- Flink chains an operator to its input when the edge is forward, the parallelism is equal
    -- and it has exactly one input; weir runs every edge as a direct call, so chaining is
    -- reported (explain) but changes nothing at run time.
    d.chained = #d.inputs == 1 and d.inputs[1].mode == "forward" -- side outputs too (§9)
  end
  return { env = env, nodes = nodes, sources = env.sources, job_name = env.job_name }
end

return M
