#!/usr/bin/env bash
# Issue 13's target, "a 64-slice 2D multi-slice file on the H200 in under 1 s end to end, file
# reading included": `mri phantom --slices` writes the ISMRMRD file, then the whole process
# `mri recon --in ms.h5 --out ms.nii.gz --jobs J` (reading, 64 reconstructions with one Q for
# the shared trajectory, NIfTI writing) is timed for J = 1, 2, 4, 8, best of 3, wall time and
# peak RSS by GNU time (`/usr/bin/time -v`; Python's clock and getrusage where it is missing).
#
# The case (defaults; override by environment): a clinical 2D radial multi-slice stack, 64
# slices of 256^2 (FOV 256 mm, 1 mm voxels, 3 mm apart), 8 receive coils, 256 spokes of 512
# samples (2x oversampled readout; 256 of the ~402 Nyquist spokes, as radial scans undersample),
# SNR 30, SENSE with maps estimated per slice, 20 CG iterations, the NUFFT (--method nufft).
#   SLICES MATRIX SPOKES READOUT COILS ITERATIONS METHOD BACKEND JOBS RUNS EXT NO_Q_SHARE
# EXT=nii writes uncompressed NIfTI: gzip of the 16 MB of float32 magnitudes (they hardly
# compress: 15.0 MB) costs ~0.6 s on one core of the development VM.
# NO_Q_SHARE=1 adds --no-q-share (each slice computes its own Q at once instead of waiting for
# the first slice to store it: where Q is cheap, the GPU's NUFFT).
# A quick CPU check: SLICES=8 MATRIX=64 SPOKES=64 READOUT=128 COILS=4 ITERATIONS=5 JOBS="1 2"
#
#   tools/dev/bench-multislice.sh BUILD_DIR
# BUILD_DIR is a build tree or a staged one (tools/dev/stage-device.sh): the tool is
# BUILD_DIR/cli/mri in both (BUILD_DIR/bin/mri for an install prefix); the staged lib/ and
# runtime-libs/ go first on LD_LIBRARY_PATH.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
mri=""
for candidate in "$build/cli/mri" "$build/bin/mri"; do
  [ -x "$candidate" ] && { mri=$candidate; break; }
done
[ -n "$mri" ] || { echo "$0: no mri in $build/cli or $build/bin" >&2; exit 1; }
export LD_LIBRARY_PATH="$build/lib:$build/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

slices=${SLICES:-64} matrix=${MATRIX:-256} spokes=${SPOKES:-256} readout=${READOUT:-512} coils=${COILS:-8}
iterations=${ITERATIONS:-20} method=${METHOD:-nufft} backend=${BACKEND:-auto} jobs=${JOBS:-1 2 4 8} runs=${RUNS:-3}
ext=${EXT:-nii.gz}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== $(date -u +%FT%TZ) $(hostname)"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | sed 's/^/gpu: /'
phantom=(phantom --matrix "$matrix,$matrix" --traj radial --spokes "$spokes" --readout "$readout" --coils "$coils"
         --snr 30 --slices "$slices" --slice-spacing 3 --out "$work/ms.h5")
start=$(date +%s.%N)
"$mri" "${phantom[@]}"
echo "mri ${phantom[*]}: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s," \
     "$(du -m "$work/ms.h5" | cut -f1) MB"

# One run: wall seconds and peak RSS (MB) from GNU time's verbose report; where GNU time is not
# installed (a bare device machine), from Python's clock and getrusage of the child instead.
run_once() {
  local cmd=("$mri" recon --in "$work/ms.h5" --out "$work/ms.$ext" --quiet --iterations "$iterations"
             --method "$method" --backend "$backend" --jobs "$1" --report "$work/r.json" ${NO_Q_SHARE:+--no-q-share})
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -v -o "$work/time.txt" "${cmd[@]}" >/dev/null
    awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; ++i) s = s * 60 + t[i] }
                /Maximum resident set size/ { kb = $2 }
                END { printf "%.3f %.0f\n", s, kb / 1024 }' "$work/time.txt"
  else
    python3 -c 'import resource, subprocess, sys, time
t = time.perf_counter(); subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print("%.3f %.0f" % (time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))' "${cmd[@]}"
  fi
}

echo "mri recon --in ms.h5 --out ms.$ext --quiet --iterations $iterations --method $method --backend $backend --jobs J${NO_Q_SHARE:+ --no-q-share}"
printf '| %-4s | %-13s | %-22s | %-13s | %-9s |\n' jobs "best wall (s)" "runs (s)" "peak RSS (MB)" "ms/slice"
printf '|------|---------------|------------------------|---------------|-----------|\n'
for j in $jobs; do
  best="" all="" rss=0
  for ((r = 0; r < runs; ++r)); do
    read -r wall mb < <(run_once "$j")
    all+="$wall "
    rss=$(( mb > rss ? mb : rss ))
    best=$(awk -v a="${best:-1e9}" -v b="$wall" 'BEGIN { print (b < a) ? b : a }')
  done
  printf '| %-4s | %-13s | %-22s | %-13s | %-9s |\n' "$j" "$best" "$all" "$rss" \
    "$(awk -v b="$best" -v n="$slices" 'BEGIN { printf "%.1f", 1000 * b / n }')"
done
q=$(grep -c '"q_cache": "hit"' "$work/r.json" || true)
backend_ran=$(grep -m1 -o '"backend": "[a-z]*"' "$work/r.json" | cut -d'"' -f4)
echo "last run: backend $backend_ran; Q loaded from the run's cache by $q of $slices slices"
# How reading and reconstructing overlapped (seconds from the batch's start, after the headers
# are read): the report's source.read_seconds and each item's "batch" times.
field() { grep -o "\"$1\": [0-9.e+-]*" "$work/r.json" | awk '{ print $2 }'; }
echo "last run: file read by $(field read_seconds | head -1) s; first slice: data in $(field data_in_s | head -1) s," \
     "started $(field started_s | head -1) s, done $(field finished_s | head -1) s; last slice done" \
     "$(field finished_s | sort -g | tail -1) s (from the batch's start)"
# Where the whole process's time went (seconds since exec; the report's "process"): start-up to
# `mri recon`'s start, the headers read, the batch done, the outputs written; the wall time after
# the last is the exit.
echo "last run: process: recon started $(field recon_started_s) s, headers read $(field headers_read_s) s," \
     "batch done $(field batch_done_s) s, outputs written $(field outputs_written_s) s (since exec)"
