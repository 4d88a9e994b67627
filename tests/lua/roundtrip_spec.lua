-- Specs for weir.roundtrip (weir run --verify-checkpoints): after every batch the job's state is
-- snapshotted, encoded, decoded, thrown away and restored. A job whose state survives gives the
-- same output; a rich function whose restore_state forgets a field shows it; state a checkpoint
-- cannot keep fails the job at once, naming the section and the path.
local spec = require("spec")
local weir = require("weir")
local it, eq, raises = spec.it, spec.eq, spec.raises
local W = weir.windows

local function env_with(verify)
  local env = weir.env()
  env.job = { mode = "run", verify_checkpoints = verify }
  return env
end

-- A replay with one line per ms: one event per line, so a round trip between any two (a
-- collection's elements come as one run, one batch).
local REPLAY = os.tmpname()
do
  local fh = assert(io.open(REPLAY, "w"))
  for _, v in ipairs({ "a", "b", "c", "d", "e" }) do
    fh:write("+1ms ", v, "\n")
  end
  fh:close()
end

-- A rich map counting its records, with hooks that keep n (and, with forget, not m).
local function counting(env, forget)
  return env:replay(REPLAY)
    :map({
      n = 0, m = 0,
      map = function(self, v)
        self.n, self.m = self.n + 1, self.m + 1
        return ("%s %d %d"):format(v, self.n, self.m)
      end,
      snapshot_state = function(self) return forget and self.n or { self.n, self.m } end,
      restore_state = function(self, values)
        if forget then
          self.n = values[1]
        else
          self.n, self.m = values[1][1], values[1][2]
        end
      end,
    })
end

it("a job whose hooks keep its state prints the same with and without the round trip", function()
  local plain = env_with(false)
  local a = counting(plain):collect()
  plain:execute()
  local rt = env_with(true)
  local b = counting(rt):collect()
  rt:execute()
  eq(b:values(), a:values())
  eq(#a:values(), 5)
end)

it("a restore_state that forgets a field shows: the object is rebuilt from its table", function()
  local rt = env_with(true)
  local b = counting(rt, true):collect()
  rt:execute()
  local got = b:values()
  eq(got[1], "a 1 1")
  eq(got[5], "e 5 1") -- m starts again from the table's 0 after every round trip
end)

it("window state goes through the round trip", function()
  local function job(verify)
    local env = env_with(verify)
    local out = env:from_collection({ { "k", 1 }, { "k", 2 }, { "j", 3 }, { "k", 12 } })
      :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
        :with_timestamp_assigner(function(e) return e[2] end))
      :key_by(function(e) return e[1] end)
      :window(W.tumbling_event_time(10))
      :process(function(k, ctx, els, o) o(("%s %s %d"):format(k, tostring(ctx:window()), #els)) end)
      :collect()
    env:execute()
    local v = out:values()
    table.sort(v)
    return v
  end
  eq(job(true), job(false))
  eq(#job(false), 3)
end)

it("state a checkpoint cannot keep fails the job, naming the section and the path", function()
  local env = env_with(true)
  env:from_collection({ { "k", 1 }, { "k", 2 } })
    :assign_timestamps_and_watermarks(weir.watermarks.monotonous()
      :with_timestamp_assigner(function(e) return e[2] end))
    :map(function(e) return { e[1], e[2], f = print } end)
    :key_by(function(e) return e[1] end)
    :window(W.tumbling_event_time(10))
    :process(function(_, _, els, o) o(#els) end)
    :collect()
  local err = raises(function() env:execute() end)
  local text = type(err) == "table" and err.text or tostring(err)
  assert(text:find("--verify-checkpoints, after batch 1: section window/window-1/state (key group ",
    1, true), text)
  assert(text:find("%.f is a function"), text)
end)

os.remove(REPLAY)
spec.finish()
