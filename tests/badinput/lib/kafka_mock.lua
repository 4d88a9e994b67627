-- A mock Kafka cluster for the bad-input cases that read Kafka: `weir kafka-mock` started as a
-- child of the weir running the case (the same binary, found through /proc), its first line
-- read for the bootstrap servers; kafka.produce sends lines with kcat; kafka.stop ends it.
local M = {}

---Starts `weir kafka-mock ARGS`; returns the bootstrap servers.
function M.start(args)
  M.pipe = assert(io.popen("echo $$; exec \"$(readlink /proc/$PPID/exe)\" kafka-mock " .. args,
    "r"))
  M.pid = assert(tonumber(M.pipe:read("*l")), "kafka-mock: no pid")
  local first = M.pipe:read("*l") or ""
  M.bootstrap = assert(first:match("^bootstrap%.servers=(.+)$"), "kafka-mock: " .. first)
  return M.bootstrap
end

---Produces the lines of text into a topic's partition (kcat, one message per line).
function M.produce(topic, partition, text)
  local fh = assert(io.popen(("kcat -P -b %s -t %s -p %d"):format(M.bootstrap, topic,
    partition), "w"))
  fh:write(text)
  assert(fh:close())
end

---Runs fn (the job's execute), stops the cluster, then raises fn's error again if it had one.
function M.around(fn)
  local ok, err = pcall(fn)
  os.execute("kill " .. M.pid)
  M.pipe:close()
  if not ok then
    error(err, 0)
  end
end

return M
