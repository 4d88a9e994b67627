-- Specs for weir.inputlog (weir run --input-log): which sources get a log and where, what a
-- checkpoint fsyncs, and the offset it records. The bytes themselves (logging, replay,
-- release) are runtime/inputlog.c's, tested in tests/c/check_inputlog.c and tests/cli/inputlog.sh.
local spec = require("spec")
local inputlog = require("weir.inputlog")
local it, eq = spec.it, spec.eq

local function ck_of(opts, sources)
  return { opts = opts, dir = opts.checkpoint_dir, job = { plan = { sources = sources } } }
end

local function sources()
  return {
    { source = "socket", ckpt_uid = "source-socket-1", label = "socket_text_stream (job.lua:3)" },
    { source = "stdin", ckpt_uid = "in", label = "stdin (job.lua:4)" },
    { source = "file", ckpt_uid = "source-file-1", label = "read_text_file (job.lua:5)" },
    { source = "replay", ckpt_uid = "source-replay-1", label = "replay (job.lua:6)" },
  }
end

it("a socket and stdin get a log in the checkpoint dir, named by uid; others none", function()
  local src = sources()
  local ck = ck_of({ checkpoint_dir = "ck", input_log = true }, src)
  local logged = inputlog.prepare(ck)
  eq(#logged, 2)
  eq(src[1].input_log, "ck/input-source-socket-1.log")
  eq(src[2].input_log, "ck/input-in.log")
  eq(src[3].input_log, nil)
  eq(src[4].input_log, nil)
end)

it("without --input-log no source gets a log", function()
  local src = sources()
  eq(#inputlog.prepare(ck_of({ checkpoint_dir = "ck" }, src)), 0)
  eq(src[1].input_log, nil)
end)

it("a checkpoint fsyncs the logs that exist (stdin from a regular file makes none)", function()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir) == 0)
  local src = sources()
  local ck = ck_of({ checkpoint_dir = dir, input_log = true }, src)
  inputlog.prepare(ck)
  local fh = assert(io.open(src[1].input_log, "wb"))
  fh:close()
  local list = inputlog.sync_paths(ck, { "out.txt" })
  eq(list, { "out.txt", dir .. "/input-source-socket-1.log" })
  os.execute("rm -rf " .. dir)
end)

it("before the runtime exists a checkpoint records no log offset (the start: 0)", function()
  local src = sources()
  local ck = ck_of({ checkpoint_dir = "ck", input_log = true }, src)
  inputlog.prepare(ck)
  eq(inputlog.offset(ck, src[1]), nil)
  eq(inputlog.offset(ck, src[3]), nil)
end)

spec.finish()
