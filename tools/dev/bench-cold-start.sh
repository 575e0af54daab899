#!/usr/bin/env bash
# Issue 15 item 5: the first GPU reconstruct in a process against a warm one (RECON-2D), run
# RUNS times (default 5) as fresh processes, each in the given modes: with the context made first
# through the driver API (its cost reported apart), without it, and with CUDA_MODULE_LOADING=EAGER.
# Prints every run's line (benchmarks/bench_cold_start_gpu.cpp says what each field is) and the
# medians of each field per mode.
#   tools/dev/bench-cold-start.sh BUILD_DIR      (a build tree or a staged one: tools/dev/stage-device.sh)
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
export LD_LIBRARY_PATH="$build/lib:$build/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
runs=${RUNS:-5}
echo "== $(date -u +%FT%TZ) $(hostname); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
for mode in context no-context eager; do
  args=() env_mode=()
  [ "$mode" = no-context ] && args=(--no-context)
  [ "$mode" = eager ] && env_mode=(CUDA_MODULE_LOADING=EAGER)
  lines=$(for _ in $(seq "$runs"); do env "${env_mode[@]}" "$build/benchmarks/bench_cold_start_gpu" "${args[@]}"; done)
  echo "-- $mode"
  echo "$lines"
  echo "$lines" | python3 -c '
import sys, statistics
rows = [dict(f.split("=") for f in line.split()) for line in sys.stdin if "=" in line]
print("median: " + " ".join("%s=%.2f" % (k, statistics.median(float(r[k]) for r in rows)) for k in rows[0]))'
done
