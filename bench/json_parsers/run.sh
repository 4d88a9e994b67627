#!/usr/bin/env bash
# bench/json_parsers/run.sh [LINES] [ROUNDS]: builds the parser comparison (needs
# libsimdjson-dev, libcjson-dev, libjansson-dev, libjson-c-dev, g++) in a temporary directory,
# writes LINES (default 1,000,000) click lines and runs ROUNDS (default 3) rounds of every parser.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
n=${1:-1000000} rounds=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in main cjson jansson jsonc; do
  gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -c "$here/$f.c" -o "$tmp/$f.o"
done
g++ -O2 -std=c++17 -c "$here/simdjson.cc" -o "$tmp/simdjson.o"
g++ -o "$tmp/json_parsers" "$tmp"/*.o -lsimdjson -lcjson -ljansson -ljson-c
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
  printf "{\"user\":\"user%d\",\"ts\":%d,\"page\":\"/item/%d\",\"ref\":null}\n",
    (i * 7919) % 1000, 1700000000000 + i * 3, i % 97 }' >"$tmp/clicks.jsonl"
echo "json_parsers: $n lines, $(wc -c <"$tmp/clicks.jsonl") bytes, $rounds rounds"
"$tmp/json_parsers" "$tmp/clicks.jsonl" "$rounds"
