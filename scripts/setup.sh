#!/usr/bin/env bash
# Installs what weir needs from Debian 12's packages (only what is missing; via sudo when not
# root), then configures and builds build/weir. Sourced by quickstart.sh and test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# clang and libclang-rt-14-dev (libFuzzer's runtime, only recommended by clang) build tests/fuzz
WEIR_PACKAGES=(gcc cmake pkg-config libluajit-5.1-dev libuv1-dev libedit-dev check lua-lpeg
  lua-check clang libclang-rt-14-dev)
missing=()
for p in "${WEIR_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEIR_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "setup: build/weir is ready ($(build/weir --version))"
