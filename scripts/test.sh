#!/usr/bin/env bash
# Command 2 of the README: set up, build, and run every test: the Check suites, the Lua specs,
# the golden scenarios and examples, luacheck, and the same suite again under ASan+UBSan,
# plus a smoke run of the benchmarks and a short run of every fuzz target.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
jobs=$(nproc)

echo "== tests (build/)"
(cd build && ctest --output-on-failure -j"$jobs")

echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DWEIR_WERROR=ON -DWEIR_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
# LuaJIT's own allocator and its lua_close at exit are outside ASan's view; leaks in weir's C
# code are still reported because every weir structure is freed at shutdown.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs" -LE lint)

echo "== benchmark smoke run (tiny inputs; numbers are not meaningful here)"
bench/run --smoke

echo "== fuzz targets, 10 s each from the seed corpora (build-fuzz/; longer: scripts/fuzz.sh)"
scripts/fuzz.sh 10
