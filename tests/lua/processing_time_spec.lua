-- Specs for processing-time timers on the virtual clock (API.md, Replay): a timer for T fires
-- once the clock passes T, with the clock reading T+1, never early and never twice.
local spec = require("spec")
local weir = require("weir")
local it, eq = spec.it, spec.eq

local function replay_file(text)
  local path = os.tmpname()
  local fh = assert(io.open(path, "wb"))
  fh:write(text)
  fh:close()
  return path
end

local function run(replay_text, register)
  local fired = {}
  local env = weir.env()
  local path = replay_file(replay_text)
  env:replay(path)
    :key_by(function(v) return v end)
    :window(weir.windows.global())
    :trigger(weir.trigger{
      on_element = function(_, v, _, _, ctx)
        register(v, ctx)
        return weir.CONTINUE
      end,
      on_processing_time = function(_, t, _, ctx)
        fired[#fired + 1] = { t, ctx:current_processing_time() }
        return weir.CONTINUE
      end,
    })
    :process(function() end)
  env:execute()
  os.remove(path)
  return fired
end

it("fires each timer once, when the clock passes it, reading T+1", function()
  local fired = run("@1000 a\n+5s\n", function(_, ctx)
    ctx:register_processing_time_timer(1500)
    ctx:register_processing_time_timer(1500)      -- a duplicate is a no-op
    ctx:register_processing_time_timer(3000)
    ctx:register_processing_time_timer(2000)
  end)
  eq(fired, { { 1500, 1501 }, { 2000, 2001 }, { 3000, 3001 } })
end)

it("does not fire a timer whose time the clock has only reached", function()
  local fired = run("@1000 a\n@1500\n", function(_, ctx)
    ctx:register_processing_time_timer(1500)
  end)
  -- the replay ends at 1500: under weir's end-of-input policy the timer still fires, as if due
  eq(fired, { { 1500, 1501 } })
  local env_fired = {}
  local env = weir.env{ end_of_input = "flink" }
  local path = replay_file("@1000 a\n@1500\n")
  env:replay(path):key_by(function(v) return v end):window(weir.windows.global())
    :trigger(weir.trigger{
      on_element = function(_, _, _, _, ctx)
        ctx:register_processing_time_timer(1500)
        return weir.CONTINUE
      end,
      on_processing_time = function(_, t) env_fired[#env_fired + 1] = t return weir.CONTINUE end,
    })
    :process(function() end)
  env:execute()
  os.remove(path)
  eq(env_fired, {})
end)

it("fires a timer already in the past at once, without moving the clock back", function()
  local fired = run("@1000 a\n+1s b\n", function(v, ctx)
    if v == "a" then ctx:register_processing_time_timer(10) end
  end)
  eq(fired, { { 10, 1000 } })
end)

it("a deleted timer never fires", function()
  local seen = 0
  local fired = run("@1000 a\n+1s a\n+5s\n", function(_, ctx)
    seen = seen + 1
    if seen == 1 then ctx:register_processing_time_timer(3000) end
    if seen == 2 then ctx:delete_processing_time_timer(3000) end
  end)
  eq(fired, {})
end)

it("timers at equal times fire in registration order across keys", function()
  local order = {}
  local env = weir.env()
  local path = replay_file("@0 b\na\nc\n+5s\n")
  env:replay(path):key_by(function(v) return v end):window(weir.windows.global())
    :trigger(weir.trigger{
      on_element = function(_, _, _, _, ctx)
        ctx:register_processing_time_timer(100)
        return weir.CONTINUE
      end,
      on_processing_time = function() return weir.FIRE end,
    })
    :process(function(key) order[#order + 1] = key end)
  env:execute()
  os.remove(path)
  eq(order, { "b", "a", "c" })
end)

spec.finish()
