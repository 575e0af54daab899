#!/usr/bin/env bash
# Issue 16's CPU target, "a 64-slice batch on 2 MPI ranks: at least 1.8x one rank (CPU machine,
# 2 cores: 1 thread per rank), identical images": `mri phantom --slices` writes the file of
# tools/dev/bench-multislice.sh, then `mri recon --in ms.h5 --jobs 1 --backend cpu` runs as one
# process (no mpirun: the run of today) and under `mpirun -n R` for R in RANKS, each rank one
# OpenMP thread (OMP_NUM_THREADS=1, OMP_WAIT_POLICY=passive), best of RUNS, wall time from the
# shell's clock around the whole command (mpirun's start included). Every output is compared with
# the one-process image (cmp: bitwise), and the last run's report says where the time went per
# rank (items, reconstruction seconds, first start and last end from the batch's start).
# Ranks above the cores are oversubscribed (--oversubscribe): the script says so.
#
# The case (defaults; override by environment): 64 slices of 256^2, 8 coils, radial 256 spokes
# x 512 samples, SNR 30, SENSE with maps estimated per slice, 20 CG iterations, --method nufft.
#   SLICES MATRIX SPOKES READOUT COILS ITERATIONS METHOD RANKS RUNS
# A quick check: SLICES=8 MATRIX=64 SPOKES=64 READOUT=128 COILS=4 ITERATIONS=5 RUNS=1
#
#   tools/dev/bench-mpi.sh BUILD_DIR        (BUILD_DIR/cli/mri, an MPI build: mri --version)
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
mri=$(cd "$1" && pwd)/cli/mri
[ -x "$mri" ] || { echo "$0: no $mri" >&2; exit 1; }
"$mri" --version | grep -q "MPI: not built" && { echo "$0: $mri is built without MPI" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "$0: no mpirun (apt-get install openmpi-bin)" >&2; exit 1; }

slices=${SLICES:-64} matrix=${MATRIX:-256} spokes=${SPOKES:-256} readout=${READOUT:-512} coils=${COILS:-8}
iterations=${ITERATIONS:-20} method=${METHOD:-nufft} ranks=${RANKS:-1 2 3 4} runs=${RUNS:-3}
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
mpirun=(mpirun -q --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root) # mpirun refuses root without it
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== $(date -u +%FT%TZ) $(hostname)"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(getconf _NPROCESSORS_ONLN) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$mri" --version | tail -1
"$mri" phantom --matrix "$matrix,$matrix" --traj radial --spokes "$spokes" --readout "$readout" --coils "$coils" \
       --snr 30 --slices "$slices" --slice-spacing 3 --out "$work/ms.h5"
echo "file: $slices slices $matrix^2, $coils coils, radial $spokes x $readout: $(du -m "$work/ms.h5" | cut -f1) MB"

recon=(recon --in "$work/ms.h5" --quiet --iterations "$iterations" --method "$method" --backend cpu --jobs 1)
seconds() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }'; }
# One run with R ranks (R = 1: no mpirun), output ms<R>.nii and report r<R>.json; prints its seconds.
run_once() {
  local launch=()
  [ "$1" -gt 1 ] && launch=("${mpirun[@]}" -n "$1")
  local start
  start=$(date +%s.%N)
  "${launch[@]}" "$mri" "${recon[@]}" --out "$work/ms$1.nii" --report "$work/r$1.json"
  seconds "$start"
}

echo "OMP_NUM_THREADS=1 [mpirun -n R] mri ${recon[*]/$work\//} --out ms.nii"
printf '| %-5s | %-13s | %-20s | %-8s | %-16s |\n' ranks "best wall (s)" "runs (s)" speed-up "images"
printf '|-------|---------------|----------------------|----------|------------------|\n'
one=""
for r in $ranks; do
  best="" all=""
  for ((i = 0; i < runs; ++i)); do
    t=$(run_once "$r")
    all+="$t "
    best=$(awk -v a="${best:-1e9}" -v b="$t" 'BEGIN { print (b < a) ? b : a }')
  done
  [ "$r" -eq 1 ] && one=$best
  same="bitwise = 1 rank"
  [ -f "$work/ms1.nii" ] && ! cmp -s "$work/ms1.nii" "$work/ms$r.nii" && same="DIFFERENT"
  note=""
  [ "$r" -gt "$(getconf _NPROCESSORS_ONLN)" ] && note=" (oversubscribed)"
  printf '| %-5s | %-13s | %-20s | %-8s | %-16s |\n' "$r$note" "$best" "$all" \
    "$(awk -v o="${one:-0}" -v b="$best" 'BEGIN { if (o > 0) printf "%.2fx", o / b; else print "-" }')" "$same"
done

# Where the time went in the last run of each rank count (the report's per-item "batch" times,
# seconds from each rank's batch start; rank 0's file reading in source.read_seconds).
for r in $ranks; do
  python3 - "$work/r$r.json" "$r" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
items = [x for x in doc["reconstructions"] if "batch" in x]
per = {}
for x in items:
    per.setdefault(x.get("rank", 0), []).append(x)
hits = sum(1 for x in items if x.get("q_cache") == "hit")
print(f"{sys.argv[2]} rank(s): file read by rank 0 in {doc['source'].get('read_seconds', 0):.2f} s; Q loaded by {hits} of {len(items)} items")
for rank, xs in sorted(per.items()):
    busy = sum(x["batch"]["finished_s"] - x["batch"]["started_s"] for x in xs)
    first = min(x["batch"]["data_in_s"] for x in xs)
    last = max(x["batch"]["finished_s"] for x in xs)
    print(f"  rank {rank}: {len(xs)} items, reconstructing {busy:.2f} s, first data in {first:.2f} s, last done {last:.2f} s")
EOF
done
