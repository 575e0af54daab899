#!/usr/bin/env bash
# Builds and runs every test. GPU tests (label gpu) print SKIPPED where no CUDA device exists.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/configure.sh"
cd "$root/build"
# ctest runs $(nproc) tests at once and each test's OpenMP team is $(nproc) threads: with GCC's
# default (active) waiting, the idle threads of one test spin on the cores the other needs.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
ctest --output-on-failure -j "$(nproc)" "$@"
