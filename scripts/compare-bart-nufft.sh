#!/usr/bin/env bash
# Issue 15 item 4: the CPU adjoint NUFFT, ours (`mri nufft -a`) against BART's (`bart nufft -a`) on
# the same files, whole processes (each reads the trajectory and k-space, plans, grids, FFTs,
# writes the image: what a user runs), 2 OpenMP threads each, passive waiting, best and median of
# RUNS (default 5), alternating. The case: 256^2, BART's radial trajectory of 2048 spokes x 512
# samples (2x oversampled readout: M = 2^20, FINUFFT's benchmark size), BART's phantom k-space.
# Accuracy: both images against our exact sum (`mri nufft -a --exact`), relative L2, after the
# best complex scale (BART's gridding has a small gain of its own: docs/performance.md).
#   scripts/compare-bart-nufft.sh [build-dir]       (a build with cli/mri; run on a quiet machine)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
mri="$build/cli/mri"
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive
echo "== $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); bart $(bart version)"
bart traj -x 512 -y 2048 -r t0 && bart scale 0.5 t0 traj && bart phantom -k -t traj ksp
wall() { # command...: wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}
ours=() theirs=()
for _ in $(seq "$runs"); do
  theirs+=("$(wall bart nufft -a -d 256:256:1 traj ksp img_bart)")
  ours+=("$(wall "$mri" nufft -a -t traj -d 256,256 ksp img_mri)")
done
"$mri" nufft -a --exact -t traj -d 256,256 ksp img_exact >/dev/null
stats() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "best %.3f s, median %.3f s", v[1], v[int((NR + 1) / 2)] }'; }
echo "bart nufft -a: $(stats "${theirs[@]}")  (${theirs[*]})"
echo "mri nufft -a:  $(stats "${ours[@]}")  (${ours[*]})"
python3 - <<'PY'
import array, math
def cfl(name):  # complex float32 values, as (re, im) pairs
    a = array.array("f")
    with open(name + ".cfl", "rb") as f:
        a.frombytes(f.read())
    return [complex(a[i], a[i + 1]) for i in range(0, len(a), 2)]
ref = cfl("img_exact")
norm_ref = math.sqrt(sum(abs(r) ** 2 for r in ref))
for name in ("img_bart", "img_mri"):
    x = cfl(name)
    raw = math.sqrt(sum(abs(a - b) ** 2 for a, b in zip(x, ref))) / norm_ref
    s = sum(a.conjugate() * b for a, b in zip(x, ref)) / sum(abs(a) ** 2 for a in x)
    scaled = math.sqrt(sum(abs(s * a - b) ** 2 for a, b in zip(x, ref))) / norm_ref
    print(f"{name}: rel L2 vs the exact sum {raw:.2e} (after the best complex scale {scaled:.2e}, |scale| {abs(s):.5f})")
PY
