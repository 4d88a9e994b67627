#!/usr/bin/env bash
# key_by(fn, { partitioned = true }) (issue 19 item 3) on the mock cluster: the claim that every
# record of a key arrives in partition weir.key_group(key, P) of its topic (P partitions), as
# --group's rule has it. (1) Input partitioned so: the job passes, with and without --group,
# and its results equal a run without the option. (2) Input not partitioned so: the job fails
# naming the key_by (its script line and the operator it feeds), the key, its key group and
# the partition it arrived in; with --group too, before any snapshot. (3) A wrong key past the
# first 1000 records of its partition is still found (1 in 100 are checked: record 1500).
# (4) Options: an unknown one is an error naming it; partitioned must be a boolean.
# No sleeps: every wait is for a process.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.bash"
. "$HERE/kafka_lib.bash"

start_mock --topic good:4 --topic bad:4 --topic late:4 --topic g-state:4 --topic h-state:4
cat > gen.lua <<'LUA'
local weir = require("weir")
-- "partition key,n": key k<i % 12>, in partition weir.key_group(key, 4)
for i = 1, 600 do
  local k = "k" .. (i % 12)
  print(weir.key_group(k, 4) .. " " .. k .. "," .. i)
end
LUA
run_weir run gen.lua
expect_rc 0 "the input"
for p in 0 1 2 3; do grep "^$p " out | cut -d' ' -f2 | kc -P -t good -p $p; done
# bad: every key in partition 0 (k1 is not in key group 0 of 4)
cut -d' ' -f2 out | kc -P -t bad -p 0
# late: partitioned, but record 1500 of partition 0 is a key of another key group
cat > late.lua <<'LUA'
local weir = require("weir")
local zero, other
for i = 0, 100 do
  local k = "k" .. i
  local g = weir.key_group(k, 4)
  if g == 0 and not zero then zero = k elseif g ~= 0 and not other then other = k end
end
for i = 1, 1600 do print((i == 1500 and other or zero) .. "," .. i) end
LUA
run_weir run late.lua
expect_rc 0 "the late input"
kc -P -t late -p 0 < out

cat > job.lua <<'LUA'
local weir = require("weir")
local env = weir.env{ max_parallelism = 4 }
local opts = weir.args[3] == "claim" and { partitioned = true } or nil
env:kafka_source{ bootstrap_servers = weir.args[1], topics = weir.args[2], format = "csv",
  stopping_offsets = "latest" }
  :key_by(function(r) return r[1] end, opts)
  :reduce(function(a, b) return { a[1], tostring(tonumber(a[2]) + tonumber(b[2])) } end)
  :map(function(r) return r[1] .. " " .. r[2] end)
  :print()
env:execute()
LUA

# (1) partitioned input
run_weir run job.lua -- "$BS" good
expect_rc 0 "without the option"
sort out > expected
[ "$(wc -l < expected)" = 600 ] && ok || bad "600 running sums: $(wc -l < expected)"
run_weir run job.lua -- "$BS" good claim
expect_rc 0 "(1) partitioned input, the claim holds"
sort out | cmp -s - expected && ok || bad "(1) the same results with the claim"
run_weir run job.lua --group g -- "$BS" good claim
expect_rc 0 "(1) --group, the claim holds"
sort out | cmp -s - expected && ok || bad "(1) the same results with --group"

# (2) input not partitioned by key
run_weir run job.lua -- "$BS" bad
expect_rc 0 "(2) without the claim the input may be anyhow"
run_weir run job.lua -- "$BS" bad claim
expect_rc 1 "(2) the claim is false"
expect_err_has "key_by (job.lua:6, partitioned = true, feeding reduce (job.lua:7)" "(2) the key_by named"
expect_err_has 'key "k1" is in key group' "(2) the key named"
expect_err_has "but arrived in partition bad/0" "(2) the partition named"
kg=$(printf 'print(require("weir").key_group("k1", 4))' > kg.lua; "$WEIR" run kg.lua)
expect_err_has "key group $kg (weir.key_group(key, 4): bad has 4 partitions)" "(2) its key group"
run_weir run job.lua --group h -- "$BS" bad claim
expect_rc 1 "(2) --group, the claim is false"
expect_err_has "but arrived in partition bad/0: the input is not partitioned by this key" \
  "(2) --group: the claim's message"

# (3) past the first 1000 records of a partition, 1 in 100
run_weir run job.lua -- "$BS" late claim
expect_rc 1 "(3) a wrong key at record 1500"
expect_err_has "but arrived in partition late/0" "(3) its message"

# (4) the options
sed 's/{ partitioned = true }/{ partitioned = true, bogus = 1, zz = 2 }/' job.lua > opts.lua
run_weir run opts.lua -- "$BS" good claim
expect_rc 1 "(4) unknown options"
expect_err_has "opts.lua:6: key_by: unknown options bogus, zz (key_by takes partitioned)" \
  "(4) unknown options named"
sed 's/{ partitioned = true }/{ partitioned = "yes" }/' job.lua > opts2.lua
run_weir run opts2.lua -- "$BS" good claim
expect_rc 1 "(4) partitioned not a boolean"
expect_err_has "key_by: partitioned must be true or false, got yes" "(4) its message"

stop_mock
finish
