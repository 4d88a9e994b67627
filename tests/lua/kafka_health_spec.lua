-- Specs for weir.kafka_health: librdkafka's statistics (as its stats callback gives them: the
-- shape of a report from a consumer of the mock cluster) read into brokers down and partitions
-- without a reachable leader, and the texts --progress and the status print from them. The
-- source end to end (a broker set down and up on the mock cluster): tests/cli/kafka_errors.sh.
local spec = require("spec")
local json = require("weir.json")
local health = require("weir.kafka_health")
local it, eq = spec.it, spec.eq

-- a report: broker 1 (the bootstrap address matched to node 1) in state s1, broker 2 learned
-- in state s2, the logical GroupCoordinator, a bootstrap address never matched to a node, and
-- topic t: partitions 0 (leader 1) and 1 (leader 2) read, 2 not read, -1 librdkafka's own
local function report(s1, s2, leader1)
  return assert(json.decode(([[{"name":"rdkafka#consumer-1","type":"consumer","brokers":{
    "127.0.0.1:1/1":{"name":"127.0.0.1:1/1","nodeid":1,"source":"configured","state":"%s",
      "stateage":4200000},
    "127.0.0.1:2/2":{"name":"127.0.0.1:2/2","nodeid":2,"source":"learned","state":"%s",
      "stateage":1500},
    "GroupCoordinator":{"name":"GroupCoordinator","nodeid":1,"source":"logical",
      "state":"DOWN","stateage":1},
    "127.0.0.1:9/bootstrap":{"name":"127.0.0.1:9/bootstrap","nodeid":-1,
      "source":"configured","state":"DOWN","stateage":1}},
    "topics":{"t":{"topic":"t","partitions":{
      "0":{"partition":0,"leader":1,"desired":true},
      "1":{"partition":1,"leader":%d,"desired":true},
      "2":{"partition":2,"leader":2,"desired":false},
      "-1":{"partition":-1,"leader":-1,"desired":false}}}}}]]):format(s1, s2, leader1)))
end

it("every broker up: nothing down, every partition read has a leader", function()
  local h = health.summarize(report("UP", "UP", 2), "")
  eq(h, { brokers = 2, down = {}, partitions = 2, unreachable = 0 })
  eq(health.troubled(h), false)
end)

it("a broker down: it is named with its state and how long, and the partition it leads", function()
  local h = health.summarize(report("TRY_CONNECT", "UP", 2), "127.0.0.1:1/1: Disconnected")
  eq(h.down, { { name = "127.0.0.1:1/1", state = "TRY_CONNECT", for_ms = 4200 } })
  eq({ h.brokers, h.partitions, h.unreachable, h.last_error },
    { 2, 2, 1, "127.0.0.1:1/1: Disconnected" })
  eq(health.troubled(h), true)
end)

it("a partition whose leader is unknown (-1) is unreachable with every broker up", function()
  local h = health.summarize(report("UP", "UP", -1), "")
  eq({ #h.down, h.unreachable }, { 0, 1 })
  eq(health.troubled(h), true)
end)

it("the status lines: what is down and the last error, or all up", function()
  local out = {}
  health.text_lines({
    { label = "kafka_source a t", health = health.summarize(report("DOWN", "UP", 2), "boom") },
    { label = "kafka_source b t", health = health.summarize(report("UP", "UP", 2), "") },
    { label = "kafka_source c t" } }, out)
  eq(out, {
    "kafka_source a t: 1 of 2 broker(s) down: 127.0.0.1:1/1 (DOWN for 4s), 1 of 2 partition(s) "
      .. "without a reachable leader; last error: boom",
    "kafka_source b t: 2 broker(s) up, 2 partition(s) with a leader",
    "kafka_source c t: no statistics from librdkafka yet (or statistics.interval.ms is 0)" })
end)

it("a report that is not librdkafka's shape counts nothing (and does not fail)", function()
  eq(health.summarize(nil, nil), { brokers = 0, down = {}, partitions = 0, unreachable = 0 })
  eq(health.summarize({ brokers = 3, topics = { t = { partitions = "x" } } }, ""),
    { brokers = 0, down = {}, partitions = 0, unreachable = 0 })
end)
spec.finish()
