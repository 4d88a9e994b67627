#!/usr/bin/env bash
# The kill -9 loop (issue 14 item 7(a), 7(b)), generic over a job: killloop.sh WEIR KILL_AT
# JOBDIR [KILLS]. JOBDIR holds job.lua, gen (the name of its input's generator in gen/, which
# writes the input into the current directory, the same bytes every time), outputs (the job's write_text files, one a line),
# interval (the --checkpoint-interval) and optionally args (more words for weir run, such as
# --replay FILE). The reference is one uninterrupted run without checkpoints. Then the same
# command with --checkpoint-dir is started again and again and killed with SIGKILL KILLS times
# (default 12, or $WEIR_KILLS), at points that land everywhere: at once (before the run's first
# checkpoint), while a checkpoint is written (its .tmp- directory made, its state file made
# or closed, its MANIFEST made, its rename), after 1 to 3 committed checkpoints, when the first
# output reaches a random size, and (the last kill) when it reaches its final size. Then it
# runs to the end, and once more (which must say the job already finished). Every output must
# be byte-identical to the reference: the test prints the lost, duplicated and differing line
# counts and fails if any is not 0.
# The kill points come from a seeded random sequence: $WEIR_KILL_SEED, or a new seed each run,
# printed at the start and on failure (rerun with WEIR_KILL_SEED=S to get the same points; the
# timing of a real-time test still varies). The waits are kill_at's (inotify, no deadline), so a
# slow machine makes the loop slower, never wrong. KILLS=0 only checks that the job and its
# generator run.
set -u
WEIR=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
KILL_AT=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
JOBDIR=$(cd "$3" && pwd)
KILLS=${4:-${WEIR_KILLS:-12}}
SEED=${WEIR_KILL_SEED:-$(( (RANDOM ^ $$) % 32768 ))} # bash seeds RANDOM from the time and pid
name=$(basename "$JOBDIR")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
cp "$JOBDIR"/*.lua "$(dirname "$JOBDIR")"/gen/*.lua .
gen=$(cat "$JOBDIR/gen")
read -r -a extra < <(cat "$JOBDIR/args" 2>/dev/null || true)
interval=$(cat "$JOBDIR/interval")
mapfile -t outputs < "$JOBDIR/outputs"
RANDOM=$SEED
echo "kill loop $name: seed $SEED, $KILLS kills"

fail() {
  echo "FAIL: kill loop $name (seed $SEED; rerun with WEIR_KILL_SEED=$SEED): $*"
  if [ -s loop.err ]; then
    echo "--- the runs' stderr (last 30 lines):"
    tail -30 loop.err
  fi
  exit 1
}

timeout 120 "$WEIR" run "$gen" > /dev/null || fail "$gen failed"
timeout 300 "$WEIR" run job.lua "${extra[@]}" > ref.out 2> ref.err \
  || fail "the uninterrupted run failed: $(tail -5 ref.err)"
mkdir want
for f in "${outputs[@]}"; do
  [ -f "$f" ] || fail "the uninterrupted run wrote no $f"
  mkdir -p "want/$(dirname "$f")"
  mv "$f" "want/$f"
done
rm -rf "${outputs[@]%%/*}"
if [ "$KILLS" = 0 ]; then
  echo "kill loop $name: reference run only (KILLS=0)"
  exit 0
fi
final_size=$(stat -c %s "want/${outputs[0]}")

cmd=("$WEIR" run job.lua "${extra[@]}" --checkpoint-dir ck --checkpoint-interval "$interval")
rand() { echo $(( (RANDOM << 15 | RANDOM) % $1 )); }

# the kinds of kill point, each used once in a shuffled order, then at random; the last kill is
# at the end of the output
kinds=(now writing commits size)
order=()
for k in "${kinds[@]}"; do order+=("$k"); done
for ((i = ${#order[@]} - 1; i > 0; i--)); do
  j=$(rand $((i + 1)))
  t=${order[i]}; order[i]=${order[j]}; order[j]=$t
done
while [ ${#order[@]} -lt $((KILLS - 1)) ]; do order+=("${kinds[$(rand ${#kinds[@]})]}"); done
order=("${order[@]::KILLS-1}" end)

kills=0
runs=0
midwrite=0
landed=()
i=0
for kind in "${order[@]}"; do
  cur=$(stat -c %s "${outputs[0]}" 2>/dev/null || echo 0)
  # the i-th of KILLS kills by size lands in the i-th slice of the output (or at the first
  # write after the restore, when the output is past that already)
  target=$(( final_size * i / KILLS + $(rand $(( final_size / KILLS + 1 ))) ))
  [ "$target" -gt "$cur" ] || target=$((cur + 1))
  i=$((i + 1))
  case $kind in
    now) cond=(now) ;;
    writing) cond=(writing ck "$(rand 5)") ;;
    commits) cond=(commits ck "$((1 + $(rand 3)))") ;;
    size) cond=(size "${outputs[0]}" "$target") ;;
    end) cond=(size "${outputs[0]}" "$final_size") ;;
  esac
  runs=$((runs + 1))
  echo "=== run $runs: kill at ${cond[*]}" >> loop.err
  "$KILL_AT" "${cond[@]}" -- "${cmd[@]}" >> run.out 2>> loop.err
  rc=$?
  case $rc in
    200)
      kills=$((kills + 1))
      landed+=("${cond[0]}${cond[2]:+:${cond[2]}}")
      # a kill that left a half-written checkpoint (the next start removes it)
      ls -A ck 2>/dev/null | grep -q '^\.tmp-' && midwrite=$((midwrite + 1))
      ;;
    0) echo "=== run $runs: ended before the kill" >> loop.err ;;
    *) fail "run $runs (kill at ${cond[*]}) exited $rc" ;;
  esac
done
# the last kill, at the end of the output, may come after the job has finished
[ "$kills" -ge $((KILLS - 1)) ] \
  || fail "only $kills of $KILLS kills landed while the job ran (${landed[*]})"

# to the end, then once more: a finished job says so and leaves its output alone
for _ in 1 2 3; do
  runs=$((runs + 1))
  echo "=== run $runs: to the end" >> loop.err
  timeout 300 "${cmd[@]}" >> run.out 2> last.err
  rc=$?
  cat last.err >> loop.err
  [ $rc = 0 ] || fail "run $runs (to the end) exited $rc: $(tail -3 last.err)"
  grep -q "job already finished" last.err && break
done
grep -q "job already finished" last.err || fail "the last run did not say the job had finished"
grep -q "is corrupt" loop.err && fail "a kill left a checkpoint that was taken for valid and is corrupt: $(grep -m1 'is corrupt' loop.err)"
grep -q "restored ck/chk-" loop.err || fail "no run restored a checkpoint"

lost=0 dup=0 differ=0
for f in "${outputs[@]}"; do
  [ -f "$f" ] || { lost=$((lost + $(wc -l < "want/$f"))); continue; }
  sort "want/$f" > a.sorted
  sort "$f" > b.sorted
  lost=$((lost + $(comm -23 a.sorted b.sorted | wc -l)))
  dup=$((dup + $(comm -13 a.sorted b.sorted | wc -l)))
  differ=$((differ + $(awk 'NR == FNR { w[FNR] = $0; n = FNR; next }
    { if (!(FNR in w) || w[FNR] != $0) d++; m = FNR }
    END { if (n > m) d += n - m; print d + 0 }' "want/$f" "$f")))
  cmp -s "want/$f" "$f" || differ=$((differ > 0 ? differ : 1))
done
restores=$(grep -c "restored ck/chk-" loop.err)
echo "kill loop $name: $kills kills (${landed[*]}; $midwrite in the middle of a checkpoint's write), $runs runs, $restores restores: $lost lost, $dup duplicated, $differ differing lines"
[ $lost = 0 ] && [ $dup = 0 ] && [ $differ = 0 ] || fail "the output differs from the uninterrupted run's"
exit 0
