#!/usr/bin/env bash
# Builds and runs every test. GPU tests (label gpu) print SKIPPED where no CUDA device exists.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/configure.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)" "$@"
