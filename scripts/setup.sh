#!/usr/bin/env bash
# Installs what weir needs from Debian 12's packages (only what is missing; via sudo when not
# root), then configures and builds build/weir. Sourced by quickstart.sh and test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# LuaJIT: the OpenResty-maintained branch (libluajit2-5.1-dev, the same library name, headers and
# luajit.pc), not Debian 12's libluajit-5.1-dev: that snapshot (git20220320) predates LuaJIT's fix
# "x64: Fix RETHI/RETLO swap after call" and truncates the pointer next() and pairs() return to
# 32 bits in some compiled traces (an intermittent SEGV; tests/lua/jitcheck.lua watches for it).
# Installing it replaces libluajit-5.1-dev.
# zlib1g-dev: zlib's crc32, the checksum of every checkpoint section and file (runtime/ckpt.c)
# clang and libclang-rt-14-dev (libFuzzer's runtime, only recommended by clang) build tests/fuzz
# luajit2: the luajit interpreter of the same OpenResty build (2.1-20230119) that weir links, for
# bench/'s hand-written LuaJIT peers (Debian's package luajit is the older git20220320 snapshot,
# and conflicts with it)
# librsvg2-bin (rsvg-convert): tests/cli/timeline.sh renders weir timeline's SVG to PNG
# g++ and libsimdjson-dev: the JSON format's parser (runtime/json.cc); libjansson-dev: the
# messages of the JSON lines it rejects
WEIR_PACKAGES=(gcc cmake pkg-config libluajit2-5.1-dev libuv1-dev libedit-dev check lua-lpeg
  lua-check clang libclang-rt-14-dev
  librsvg2-bin
  g++
  libsimdjson-dev
  libjansson-dev
  zlib1g-dev
  librdkafka-dev
  kcat
  luajit2)
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
