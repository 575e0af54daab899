#!/usr/bin/env bash
# Whole-process cost of a CPU program that links libmri (examples/recon_cfl) against
# `bart pics` on the same BART files: 256^2 radial (403 spokes x 512, 2x oversampled readout),
# 30 CG iterations, l2 (ours: lambda = BART's r x voxels, method = nufft at 1e-3, as BART's
# gridding NUFFT; Toeplitz normal both), 2 OpenMP threads.
#   start: `recon_cfl --help` / `bart version`, process start to exit from main (dynamic
#          loading and static initialisation of every library included)
#   recon: the whole reconstruction, files read and written; and RECON-2D-MC (8 coils, BART's
#          simulated coils and maps given to both: `bart pics -l2 -r r -w 1`)
# Wall and CPU time and peak resident set of RUNS runs each (see measure()).
#   tools/dev/bench-startup.sh [build-dir]     (RUNS=10 by default)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
runs=${RUNS:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=2
bart traj -x 512 -y 403 -r t0 && bart scale 0.5 t0 traj && bart phantom -k -t traj ksp && bart ones 2 256 256 sens
# RECON-2D-MC: the same spokes seen by BART's 8 simulated coils, with BART's maps for both.
bart phantom -s 8 -k -t traj ksp8 && bart phantom -S 8 -x 256 sens8
r=0.001
lambda=$(awk -v r=$r 'BEGIN { print r * 256 * 256 }')

# Over the runs of command "$@": minimum and median wall ms, median CPU ms (user + system of the
# process, from getrusage: what the process itself costs, robust to other load on the machine)
# and median peak resident MB.
measure() {
  python3 - "$runs" "$@" <<'PY'
import resource, statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
wall, cpu, rss = [], [], []
for _ in range(runs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # GNU time reports the peak RSS of the program itself (after exec, not the forked Python).
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", "rss", *cmd], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    wall.append((time.perf_counter() - t0) * 1e3)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3)
    rss.append(int(open("rss").read().split()[-1]) / 1024)
print(f"{min(wall):.1f} {statistics.median(wall):.1f} {statistics.median(cpu):.1f} {statistics.median(rss):.1f}")
PY
}

echo "| program | case | min wall ms | median wall ms | median CPU ms | peak RSS MB |"
echo "|---|---|---|---|---|---|"
row() { local name=$1 what=$2; shift 2; read -r tmin t c m < <(measure "$@"); echo "| $name | $what | $tmin | $t | $c | $m |"; }
row "true (the clock's floor)" start true
row "mri recon_cfl" start "$build/examples/recon_cfl" --help
row "bart" start bart version
row "mri recon_cfl" "recon 30 it" "$build/examples/recon_cfl" --size 256 --iterations 30 --lambda "$lambda" --method nufft traj ksp img
row "bart pics" "recon 30 it" bart pics -S -l2 -r $r -i 30 -t traj ksp sens img2
row "mri recon_cfl" "8 coils, 30 it" "$build/examples/recon_cfl" --size 256 --iterations 30 --lambda "$lambda" --method nufft --sens sens8 traj ksp8 img3
row "bart pics" "8 coils, 30 it" bart pics -l2 -r $r -w 1 -i 30 -t traj ksp8 sens8 img4
echo
echo "$(date -u +%FT%TZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, runs=$runs"
ldd "$build/lib/libmri.so.0" | awk '{ print $1 }' | tr '\n' ' '
echo
