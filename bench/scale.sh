#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/scale.sh: scale-out throughput (issue 19 item 7): one job over a topic of the mock
# cluster (`weir kafka-mock`), run by 1 process and by 2 processes of one consumer group
# (`weir run --group`) in the same bench run, on this machine's cores. Target: 2 processes
# >= 1.7x the records per second of 1.
#
#   bench/scale.sh                 N = 10,000,000 records (rounded down), K = 3 runs of each
#   bench/scale.sh --smoke         N = 100,000, 1 run: checks results only (CI)
#   bench/scale.sh -n N -k K       chosen record count and runs
#
# The job (bench/scale.lua): kafka_source of typed "key,ts,v" records -> key_by -> sliding
# event-time windows 20 s every 1 s -> a Lua aggregate with a table accumulator (count, sum,
# min, max: no merge, so the general window operator adds every record to its 20 windows) ->
# write_text, one file per process. The input (bench/scale_gen.lua) is produced once, before
# the runs: P partitions (64, more above 9.6 M records: the mock keeps at most 5 MB of a
# partition's log; always even, so the 2 processes get equal shares, as a user sizes the
# partitions to a multiple of the processes), partitioned by weir.key_group(key, P) (the rule of --group: key group =
# input partition; max_parallelism = P), 16 keys and N / P records in each partition.
#
# Throughput = records / the wall clock from the start of the processes to the end of the
# last; the first join of a group waits 3 s on the mock cluster (the broker's
# group.initial.rebalance.delay.ms), which both runs pay: the table shows it (join s, the time
# to the last process's first assignment) and the rate after it. Each run is its own group
# (its own committed offsets and state topic NAME-state, snapshots every 10 s, the default).
# Every run's results must equal the first 1-process run's (the 2-process runs: the union of
# the two files), and hold 20 x N counted records (every record is in 20 windows), or there is
# no ratio: MISMATCH, exit 1. The broker's CPU (the mock's process, /proc) is measured per run.
#
# Where the time went: each process's main thread (the loop, the job's Lua, the source's fill)
# is sampled from /proc/PID/schedstat: s on a CPU, s queued (runnable, waiting for a CPU: the
# machine's other load), s asleep (the group's join, waiting on librdkafka's fetcher); summed
# over the processes. CPU s is the processes' whole CPU (librdkafka's threads too).
#
# Membership: each process is a static member (`--instance-id GROUP-I`, KIP-345), the deployment
# docs/SCALING.md recommends: a static member that finishes does not leave the group, so the
# other process is not held in a rebalance at its end. SCALE_DYNAMIC=1 runs dynamic members:
# the first to finish leaves, and the mock holds the rebalance that starts for
# session.timeout.ms - 1 s (a broker ends it once the others have rejoined), which the other
# process's last commit and its close wait out (bench/README.md, Scale-out).
#
# Environment: WEIR_BUILD_DIR (default build/), SCALE_PROPS (consumer properties of the
# source, NAME=VALUE words; default session.timeout.ms=6000 heartbeat.interval.ms=500: the
# mock waits session.timeout.ms - 1 s at every rebalance after the first, and a dynamic
# member that finishes leaves the group, which starts one; with librdkafka's 45 s the other
# process slept ~44 s of it. The fetch settings are the source's defaults (docs/API.md,
# "Consumer defaults"; bench/README.md, Scale-out).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEIR_BUILD_DIR:-$ROOT/build}
WEIR=$BUILD/weir
MEASURE=$BUILD/bench_measure
N=10000000
K=3
read -r -a PROPS <<<"${SCALE_PROPS-session.timeout.ms=6000 heartbeat.interval.ms=500}"

while (($# > 0)); do
  case $1 in
    --smoke) N=100000 K=1 ;;
    -n | --records) N=${2:?-n needs a record count}; shift ;;
    -k | --runs) K=${2:?-k needs a number of runs}; shift ;;
    -h | --help) sed -n '3,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/scale.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $N =~ ^[0-9]+$ && $N -gt 0 ]] || { echo "bench/scale.sh: bad record count $N" >&2; exit 2; }
[[ $K =~ ^[0-9]+$ && $K -gt 0 ]] || { echo "bench/scale.sh: bad run count $K" >&2; exit 2; }
[[ -x $WEIR && -x $MEASURE ]] || {
  echo "bench/scale.sh: build weir and bench_measure first (bench/run does)" >&2
  exit 2
}

P=$(((N + 149999) / 150000))
((P >= 64)) || P=64
P=$(((P + 1) / 2 * 2)) # even: the 2 processes get equal shares
PER=$((N / P))
((PER > 0)) || { echo "bench/scale.sh: at least $P records" >&2; exit 2; }
N=$((PER * P))
KEYS=$((16 * P))
TCK=$(getconf CLK_TCK)

TMP=$(mktemp -d "${TMPDIR:-/tmp}/weir-scale.XXXXXX")
MOCK=
cleanup() {
  [[ -n $MOCK ]] && kill "$MOCK" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

# The mock with the input topic and every run's state topic.
groups=()
for ((r = 1; r <= K; r++)); do groups+=("one$r" "two$r"); done
topics=(--topic "scale:$P")
for g in "${groups[@]}"; do topics+=(--topic "$g-state:$P"); done
mkfifo "$TMP/mock.out"
"$WEIR" kafka-mock "${topics[@]}" </dev/null >"$TMP/mock.out" 2>"$TMP/mock.err" &
MOCK=$!
line=""
read -r line <"$TMP/mock.out" || true
BS=${line#bootstrap.servers=}
[[ -n $line && $BS != "$line" ]] || { echo "bench/scale.sh: kafka-mock did not start" >&2; exit 1; }

mkdir "$TMP/in"
"$WEIR" run "$ROOT/bench/scale_gen.lua" -- "$N" "$P" "$KEYS" "$TMP/in"
# one kcat per partition, 8 at a time (each waits linger.ms for its last batch; all 64+ at
# once on a loaded machine kept the mock from answering their first requests in 10 s)
for ((p0 = 0; p0 < P; p0 += 8)); do
  kpids=()
  for ((p = p0; p < P && p < p0 + 8; p++)); do
    kcat -P -b "$BS" -t scale -p "$p" -K '\t' -X linger.ms=1000 -X batch.num.messages=10000 \
      -l "$TMP/in/$p.txt" &
    kpids+=($!)
  done
  for pid in "${kpids[@]}"; do
    wait "$pid" || { echo "bench/scale.sh: kcat failed to produce the input" >&2; exit 1; }
  done
done
rm -rf "$TMP/in"

# sample NAME: until the weir process writing $TMP/NAME.out ends, its main thread's
# /proc/PID/schedstat (ns on a CPU, ns waiting for one) every 0.2 s, the last kept in
# $TMP/NAME.sched as "STAMP RUN_NS WAIT_NS", with its start stamp in $TMP/NAME.start: the
# rest of its wall clock it slept (on the group's join, on the fetcher).
sample() {
  local pid="" line
  while [[ -z $pid ]]; do
    pid=$(pgrep -f -- "^$WEIR run .*$TMP/$1.out" || true)
    [[ -n $pid ]] || sleep 0.05
  done
  echo "$EPOCHREALTIME" >"$TMP/$1.start"
  while read -r line 2>/dev/null <"/proc/$pid/schedstat"; do
    echo "$EPOCHREALTIME $line" >"$TMP/$1.sched"
    sleep 0.2
  done
}
mock_ticks() { awk '{ print $14 + $15 }' "/proc/$MOCK/stat"; }
# stamp: each line of stdin prefixed with the wall clock (seconds since the epoch)
stamp() {
  local l
  while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done
}

# run_group GROUP PROCS: runs the job with --group GROUP in PROCS processes at once; sets
# WALL (start to the last one's end), JOIN (start to the last process's first assignment),
# CPU (the processes' user + system seconds), BROKER (the mock's CPU seconds meanwhile) and
# LOAD (the 1-minute load average at the end); checks the results.
run_group() {
  local g=$1 procs=$2 i pids=() c0 t0 t1
  c0=$(mock_ticks)
  t0=$EPOCHREALTIME
  for ((i = 1; i <= procs; i++)); do
    local member=(--instance-id "$g-$i") # static members (KIP-345); SCALE_DYNAMIC=1: dynamic
    [[ -z ${SCALE_DYNAMIC:-} ]] || member=()
    ( "$MEASURE" timeout 900 "$WEIR" run "$ROOT/bench/scale.lua" --group "$g" "${member[@]}" \
      -- "$BS" scale "$P" "$TMP/$g.$i.out" "${PROPS[@]}" 2>&1 >/dev/null |
      stamp >"$TMP/$g.$i.err" ) &
    pids+=($!)
  done
  local spids=()
  for ((i = 1; i <= procs; i++)); do
    sample "$g.$i" &
    spids+=($!)
  done
  for ((i = 1; i <= procs; i++)); do
    if ! wait "${pids[i - 1]}"; then
      echo "FAILED: $g, process $i:" >&2
      cat "$TMP/$g.$i.err" >&2
      exit 1
    fi
  done
  t1=$EPOCHREALTIME
  wait "${spids[@]}" 2>/dev/null || true
  WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  JOIN=0 CPU=0 RUN=0 WAIT=0 SLEEP=0
  for ((i = 1; i <= procs; i++)); do
    local first cpu
    first=$(awk '/ group .*: assigned / { print $1; exit }' "$TMP/$g.$i.err")
    [[ -n $first ]] || { echo "bench/scale.sh: $g, process $i was assigned nothing" >&2; exit 1; }
    JOIN=$(awk -v j="$JOIN" -v a="$t0" -v f="$first" \
      'BEGIN { d = f - a; printf "%.3f", (d > j) ? d : j }')
    cpu=$(sed -n 's/.*wall_s=[^ ]* cpu_s=\([^ ]*\) .*/\1/p' "$TMP/$g.$i.err" | tail -n 1)
    # the main thread: s on a CPU, waiting for one, asleep (sums over the processes)
    read -r RUN WAIT SLEEP < <(awk -v r="${RUN:-0}" -v w="${WAIT:-0}" -v z="${SLEEP:-0}" \
      -v t0="$(cat "$TMP/$g.$i.start")" '{ a = $2 / 1e9; b = $3 / 1e9
        printf "%.3f %.3f %.3f\n", r + a, w + b, z + ($1 - t0 - a - b) }' "$TMP/$g.$i.sched")
    CPU=$(awk -v c="$CPU" -v d="$cpu" 'BEGIN { printf "%.3f", c + d }')
  done
  BROKER=$(awk -v a="$c0" -v b="$(mock_ticks)" -v t="$TCK" 'BEGIN { printf "%.3f", (b - a) / t }')
  LOAD=$(cut -d' ' -f1 /proc/loadavg)
  if [[ -n ${SCALE_TRACE:-} ]]; then # SCALE_TRACE=1: each run's figures and stderr
    echo "$g: wall $WALL join $JOIN cpu $CPU" >&2
    cat "$TMP/$g".*.err >&2
  fi
  sort "$TMP/$g".*.out >"$TMP/$g.sorted"
  rm -f "$TMP/$g".*.out
  local events
  events=$(awk '{ s += $3 } END { printf "%d", s }' "$TMP/$g.sorted")
  if ((events != 20 * N)); then
    echo "MISMATCH: $g ($procs processes) counted $events record-windows, not 20 x $N" >&2
    exit 1
  fi
  if [[ -f $TMP/expected ]]; then
    if ! cmp -s "$TMP/expected" "$TMP/$g.sorted"; then
      echo "MISMATCH: $g ($procs processes): its results differ from one process's" >&2
      diff "$TMP/expected" "$TMP/$g.sorted" | head -n 10 >&2
      exit 1
    fi
    rm -f "$TMP/$g.sorted"
  else
    mv "$TMP/$g.sorted" "$TMP/expected"
  fi
}

median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
    END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A walls joins cpus brokers loads runs waits sleeps
for ((r = 1; r <= K; r++)); do
  for procs in 1 2; do
    if ((procs == 1)); then g=one$r; else g=two$r; fi
    run_group "$g" "$procs"
    walls[$procs]+="$WALL " joins[$procs]+="$JOIN " cpus[$procs]+="$CPU "
    brokers[$procs]+="$BROKER " loads[$procs]+="$LOAD "
    runs[$procs]+="$RUN " waits[$procs]+="$WAIT " sleeps[$procs]+="$SLEEP "
  done
done
kill "$MOCK" && wait "$MOCK" || true
MOCK=

echo "scale-out: $K runs of each, $N records, $P partitions, $KEYS keys; consumer properties:" \
  "${PROPS[*]:-none}; medians; the main threads' seconds summed over the processes"
printf '%-7s %9s %7s %6s %10s %10s %7s %9s %8s %7s %7s %9s\n' run records "wall s" "join s" \
  "rec/s" "rec/s-join" "CPU s" "us/rec" "broker" "on CPU" "queued" "asleep" 
printf '%-7s %9s %7s %6s %10s %10s %7s %9s %8s %7s %7s %9s\n' "" "" "" "" "" "" "" "CPU" \
  "ns/rec" "s" "s" "s"
declare -A W J
for procs in 1 2; do
  # shellcheck disable=SC2086 # word lists of numbers
  W[$procs]=$(median ${walls[$procs]})
  # shellcheck disable=SC2086
  J[$procs]=$(median ${joins[$procs]})
  # shellcheck disable=SC2086
  awk -v name="$procs proc" -v n="$N" -v w="${W[$procs]}" -v j="${J[$procs]}" \
    -v c="$(median ${cpus[$procs]})" -v b="$(median ${brokers[$procs]})" \
    -v r="$(median ${runs[$procs]})" -v q="$(median ${waits[$procs]})" \
    -v z="$(median ${sleeps[$procs]})" 'BEGIN {
      printf "%-7s %9d %7.2f %6.2f %10.0f %10.0f %7.2f %9.2f %8.1f %7.2f %7.2f %9.2f\n", name,
        n, w, j, n / w, n / (w - j), c, c * 1e6 / n, b * 1e9 / n, r, q, z }'
done
echo "load average (1 min) at each run's end: 1 process ${loads[1]% }; 2 processes ${loads[2]% }"
# shellcheck disable=SC2086
awk -v w1="${W[1]}" -v w2="${W[2]}" -v j1="${J[1]}" -v j2="${J[2]}" \
  -v r1="$(median ${runs[1]})" -v r2="$(median ${runs[2]})" -v q1="$(median ${waits[1]})" \
  -v q2="$(median ${waits[2]})" 'BEGIN {
  r = w1 / w2
  printf "scale (issue 19.7): 2 processes %.2fx the rate of 1 (after the join: %.2fx); " \
    "target >= 1.7x: %s\n", r, (w1 - j1) / (w2 - j2),
    (r >= 1.7 ? "met" : sprintf("MISSED by %.2fx; bound: the main threads waited %.0f s for a " \
      "core with 2 processes, %.0f s with 1 (the machine'"'"'s other load), on CPU %.1f s " \
      "(2 processes) and %.1f s (1); the join %.1f s of %.1f (bench/README.md, Scale-out)",
      1.7 / r, q2, q1, r2, r1, j2, w2))
}'
