#!/usr/bin/env bash
# Whole-process cost of a CPU program that links libmri (examples/recon_cfl) against
# `bart pics` on the same BART files: 256^2 radial (403 spokes x 512, 2x oversampled readout),
# 30 CG iterations, l2 (ours: lambda = BART's r x voxels, method = nufft at 1e-3, as BART's
# gridding NUFFT; Toeplitz normal both), 2 OpenMP threads.
#   start: `recon_cfl --help` / `bart version`, process start to exit from main (dynamic
#          loading and static initialisation of every library included)
#   recon: the whole reconstruction, files read and written
# Median wall time and median peak resident set (GNU time's %M) of RUNS runs each.
#   scripts/bench-startup.sh [build-dir]     (RUNS=10 by default)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
runs=${RUNS:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=2
bart traj -x 512 -y 403 -r t0 && bart scale 0.5 t0 traj && bart phantom -k -t traj ksp && bart ones 2 256 256 sens
r=0.001
lambda=$(awk -v r=$r 'BEGIN { print r * 256 * 256 }')

# medians over the runs of command "$@": wall milliseconds (clock around the process, GNU
# time's own start-up included) and peak resident MB
measure() {
  local i t0 t1
  : >times
  for ((i = 0; i < runs; ++i)); do
    t0=$(date +%s%N)
    /usr/bin/time -f "%M" -o rss "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000)) $(cat rss)" >>times
  done
  sort -n -k1 times | awk '{ t[NR] = $1 } END { printf "%.1f", t[int((NR + 1) / 2)] / 1000 }'
  printf " "
  sort -n -k2 times | awk '{ m[NR] = $2 } END { printf "%.1f\n", m[int((NR + 1) / 2)] / 1024 }'
}

echo "| program | case | median wall ms | median peak RSS MB |"
echo "|---|---|---|---|"
row() { local name=$1 what=$2; shift 2; read -r t m < <(measure "$@"); echo "| $name | $what | $t | $m |"; }
row "true (the clock's floor)" start true
row "mri recon_cfl" start "$build/examples/recon_cfl" --help
row "bart" start bart version
row "mri recon_cfl" "recon 30 it" "$build/examples/recon_cfl" --size 256 --iterations 30 --lambda "$lambda" --method nufft traj ksp img
row "bart pics" "recon 30 it" bart pics -S -l2 -r $r -i 30 -t traj ksp sens img2
echo
echo "$(date -u +%FT%TZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, runs=$runs"
ldd "$build/lib/libmri.so.0" | awk '{ print $1 }' | tr '\n' ' '
echo
