#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/scale_move.sh: what a partition move costs on the mock cluster (docs/SCALING.md):
# rebalance time of a join and of a leave, from the event to the first record of a moved
# partition, the snapshot bytes per partition in the state topic, and the state topic's write
# and read time per snapshot size (bench/scale_state.lua).
#
#   bench/scale_move.sh [-n N] [--spin S] [--keys K] [--session-timeout MS]
#
# Process a (bench/scale_move.lua: bench/scale.lua's job, each record slowed by S spins) runs
# alone over 8 partitions (N records, K keys, partitioned by key group); once it has read
# every partition for 3 s, process b joins (the event: b's start); once b has read its
# partitions for 3 s, b stops (SIGTERM, the event of a leave) and a takes them back. The
# times come from both processes' stderr lines, each stamped when it is written:
# "assigned"/"revoked" (weir's rebalance messages) and "first P" (the job's first record of
# partition P after a gap of 300 ms). session.timeout.ms sets how long the mock waits for the
# members at each rebalance (its timeout - 1 s). Times are the wall clock on a shared machine.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEIR_BUILD_DIR:-$ROOT/build}
WEIR=$BUILD/weir
N=800000
SPIN=20000
KEYS=1024
SESSION=6000
while (($# > 0)); do
  case $1 in
    -n) N=${2:?}; shift ;;
    --spin) SPIN=${2:?}; shift ;;
    --keys) KEYS=${2:?}; shift ;;
    --session-timeout) SESSION=${2:?}; shift ;;
    -h | --help) sed -n '3,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/scale_move.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
P=8
N=$((N / P * P))

TMP=$(mktemp -d "${TMPDIR:-/tmp}/weir-move.XXXXXX")
MOCK='' A='' B=''
cleanup() {
  for pid in $A $B $MOCK; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

mkfifo "$TMP/mock.out"
"$WEIR" kafka-mock --topic "move:$P" --topic "mv-state:$P" --topic "st-state:$P" \
  </dev/null >"$TMP/mock.out" 2>"$TMP/mock.err" &
MOCK=$!
line=""
read -r line <"$TMP/mock.out" || true
BS=${line#bootstrap.servers=}
if [[ -z $line || $BS == "$line" ]]; then
  echo "bench/scale_move.sh: kafka-mock did not start" >&2
  exit 1
fi
mkdir "$TMP/in"
"$WEIR" run "$ROOT/bench/scale_gen.lua" -- "$N" "$P" "$KEYS" "$TMP/in"
kpids=()
for ((p = 0; p < P; p++)); do
  kcat -P -b "$BS" -t move -p "$p" -K '\t' -X linger.ms=1000 -X batch.num.messages=10000 \
    -l "$TMP/in/$p.txt" &
  kpids+=($!)
done
for pid in "${kpids[@]}"; do wait "$pid"; done

stamp() {
  local l
  while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done
}
start() { # start NAME: a process of group mv; its pid in $!
  ( timeout 900 "$WEIR" run "$ROOT/bench/scale_move.lua" --group mv -- "$BS" move "$P" \
    "$TMP/$1.out" "$SPIN" "session.timeout.ms=$SESSION" heartbeat.interval.ms=500 \
    queued.min.messages=1000000 2>&1 >/dev/null | stamp >"$TMP/$1.err" ) &
}
# wait_first NAME COUNT AFTER: until NAME's stderr has COUNT "first" lines stamped after AFTER
wait_first() {
  while (($(awk -v t="$3" '$1 > t && $2 == "first"' "$TMP/$1.err" 2>/dev/null | wc -l) < $2)); do
    sleep 0.1
  done
}

t_a=$EPOCHREALTIME
start a
A=$!
wait_first a "$P" 0
sleep 3
t_join=$EPOCHREALTIME
start b
B=$!
wait_first b 1 0
sleep 3
t_leave=$EPOCHREALTIME
kill -TERM "$(pgrep -P "$B" -x timeout)" # timeout passes the signal on to weir
wait "$B" || true
B=
wait "$A" || { echo "bench/scale_move.sh: process a failed: $(cat "$TMP/a.err")" >&2; exit 1; }
A=

# stamp of the first line of FILE after T matching awk condition COND
at() { awk -v t="$2" "\$1 > t && ($3) { print \$1; exit }" "$TMP/$1.err"; }
d() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "") print "-"; else printf "%.2f", b - a }'; }
echo "move: $N records over $P partitions, $KEYS keys, spin $SPIN, session.timeout.ms $SESSION;" \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "a's start -> a assigned:             $(d "$t_a" "$(at a 0 '/assigned/')") s" \
  "(the group's first join), -> first record $(d "$t_a" "$(at a 0 '$2 == "first"')") s"
echo "join (b's start) -> a revoked:       $(d "$t_join" "$(at a "$t_join" '/revoked/')") s"
echo "join (b's start) -> b assigned:      $(d "$t_join" "$(at b 0 '/assigned/')") s"
echo "join (b's start) -> b's first record: $(d "$t_join" "$(at b 0 '$2 == "first"')") s"
echo "leave (b's SIGTERM) -> a assigned:   $(d "$t_leave" "$(at a "$t_leave" '/assigned/')") s"
# b's partitions, from its assignment message ("assigned move/3@10000 move/2@..."): " 3 2 "
moved=" $(grep -m 1 'assigned' "$TMP/b.err" | grep -o 'move/[0-9]*' | cut -d/ -f2 | tr '\n' ' ')"
echo "leave (b's SIGTERM) -> a's first record of b's partitions: $(d "$t_leave" \
  "$(at a "$t_leave" "\$2 == \"first\" && index(\"$moved\", \" \" \$3 \" \")")") s"
grep -h -E 'assigned|revoked|lost' "$TMP/a.err" "$TMP/b.err" | sed 's/^[0-9.]* //; s/127[^ ]* //' \
  | cut -c1-150 >&2

# The snapshots in the state topic: bytes per (partition, slot) (chunk headers included).
kcat -C -b "$BS" -t mv-state -e -q -f '%k %S\n' 2>/dev/null | awk '
  { split($1, k, "/"); s[k[2] "/" k[3]] += $2 }
  END { for (x in s) { n++; t += s[x]; if (s[x] > m) m = s[x] }
        printf "state topic: %d snapshots (partition, slot), mean %.0f bytes, largest %d\n",
          n, t / n, m }'
"$WEIR" run "$ROOT/bench/scale_state.lua" -- "$BS" st-state "$P" 5 10000 100000 1000000 4000000
