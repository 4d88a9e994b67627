#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ (build-fuzz/, clang with ASan + UBSan) and runs
# each for SECONDS (default 60) on a scratch copy of its seed corpus tests/fuzz/corpus/<name>/,
# so the repository gets no new files. Any crash, leak, timeout, out-of-memory or oracle failure
# fails the run; its reproducer is kept in build-fuzz/artifacts/ and the command to replay it is
# printed. Ends with one line per target. Usage:
#   scripts/fuzz.sh [SECONDS] [TARGET...]   e.g. scripts/fuzz.sh 120 lines replay
# FUZZ_MERGE=1 adds the inputs that found new coverage to the checked-in corpus (minimized).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(lines fields json csv keygroup timers duration replay)
fi

cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DWEIR_FUZZ=ON -DWEIR_WERROR=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" >/dev/null

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p build-fuzz/artifacts
summary=() failed=0
for t in "${targets[@]}"; do
  bin=build-fuzz/fuzz_$t
  seeds=tests/fuzz/corpus/$t
  [ -x "$bin" ] && [ -d "$seeds" ] || { echo "fuzz.sh: no target '$t'" >&2; exit 2; }
  corpus=$scratch/$t log=build-fuzz/fuzz_$t.log
  cp -r "$seeds" "$corpus"
  rm -f build-fuzz/artifacts/"$t"-*
  echo "== fuzz_$t: $secs s on $(ls "$seeds" | wc -l) seeds"
  rc=0
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a run over 2 GB is a leak or blowup.
  # ASAN_OPTIONS: leaks count as failures, and LuaJIT's own allocator is outside ASan's view.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix=build-fuzz/artifacts/"$t"- "$corpus" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)
  crashes=$(ls build-fuzz/artifacts/"$t"-* 2>/dev/null || true)
  if [ "$rc" -ne 0 ] || [ -n "$crashes" ]; then
    failed=1
    grep -E 'ORACLE FAILURE|ERROR: (Address|Leak)Sanitizer|ERROR: libFuzzer|runtime error|SUMMARY' \
      "$log" | head -5 || true
    for c in $crashes; do
      echo "   reproduce: $bin $c"
    done
    echo "   full log: $log"
    line="fuzz_$t: FAILED (exit $rc) after ${execs:-?} runs;"
    summary+=("$line reproducer: ${crashes:-none, see $log}")
  else
    line="fuzz_$t: ok, ${execs:-?} runs in $secs s, no crash"
    summary+=("$line (${cov:-cov ?}, corpus $(ls "$corpus" | wc -l))")
  fi
  if [ "${FUZZ_MERGE:-0}" = 1 ]; then
    "$bin" -merge=1 "$seeds" "$corpus" >>"$log" 2>&1
  fi
done
printf '%s\n' "${summary[@]}"
exit "$failed"
