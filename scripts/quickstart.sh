#!/usr/bin/env bash
# Command 1 of the README: set up, build, and run the headline example.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
echo "== weir run examples/word-count/job.lua"
build/weir run examples/word-count/job.lua
