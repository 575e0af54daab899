#!/usr/bin/env bash
# Per-CG-iteration cost on the CPU: BART's `pics` (l2, CG) vs ours (Toeplitz), 256^2 radial
# 403 spokes x 512 (2x oversampled readout), 2 threads. BART's per-iteration cost is the
# difference between a 60- and a 30-iteration run divided by 30 (set-up cancels out); ours is
# BM_Recon2D_CgIteration (Toeplitz on the 512^2 embedding + vector updates; its cost does not
# depend on the trajectory). Run on a quiet machine: scripts/compare-bart-pics.sh [build-dir]
set -euo pipefail
build="${1:-build}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
bart traj -x 512 -y 403 -r t0 && bart scale 0.5 t0 traj && bart phantom -k -t traj ksp && bart ones 2 256 256 sens
run() {
  local t0 t1
  t0=$(date +%s.%N)
  OMP_NUM_THREADS=2 bart pics -S -l2 -r 0.001 -i "$1" -t traj ksp sens img >/dev/null 2>&1
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
t30=$(run 30)
t60=$(run 60)
awk -v a="$t30" -v b="$t60" 'BEGIN { printf "bart pics: 30 iterations %.3f s, 60 iterations %.3f s, per iteration %.2f ms\n", a, b, (b - a) / 30 * 1000 }'
cd - >/dev/null
OMP_NUM_THREADS=2 "$build/benchmarks/bench_recon_cpu" --benchmark_filter=CgIteration --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true 2>/dev/null | grep median
