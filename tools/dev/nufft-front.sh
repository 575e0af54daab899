#!/usr/bin/env bash
# The NUFFT time-accuracy front (issue 15) on the device machine: bench_nufft_front_gpu runs our
# CUDA NUFFT and cuFINUFFT on the same points and inputs in one process; the CSV, the log and a
# summary go under $OUT (nufft_front.csv, nufft_front.log, summary.txt), and the plot too where
# that machine has matplotlib (else make it here: tools/docs/plot_nufft_front.py).
#
#   tools/dev/nufft-front.sh [bench_nufft_front_gpu options]   e.g. --geometries uniform3d --tolerances 1e-3
#
# The build must have cuFINUFFT: configure with -DMRI_CUFINUFFT_DIR=$PWD/.peers/cufinufft-2.5.1 (the
# peer folder copied into the git-ignored .peers/). Typical device call, the tree built and staged here:
#   tools/dev/stage-device.sh build-gpu     (copies libcufinufft.so into .devstage/lib)
#   run(command="BUILD_DIR=.devstage tools/dev/nufft-front.sh", carry=[".devstage"])
# Environment: BUILD_DIR (default build-gpu), OUT (default ./out).
# Exit status: the benchmark's (0; 1 error; 2 no device; 3 a cuFINUFFT output disagrees with ours).
set -u -o pipefail
BUILD_DIR=${BUILD_DIR:-build-gpu}
bench_args=("$@")
set -- # device-common.sh reads steps from the arguments: this script has none
default_steps=(front)
source "$(dirname "$0")/device-common.sh"
machine_header name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw nvcc --version

BENCH="$BUILD_DIR/benchmarks/bench_nufft_front_gpu"
if [ ! -x "$BENCH" ]; then
  note "no $BENCH: configure the build with -DMRI_CUFINUFFT_DIR=<cuFINUFFT folder> (see this script's header)"
  exit 1
fi
use_build_libraries
# cuFINUFFT's CUDA runtime and cuFFT (libcudart.so.13, libcufft.so.12): the toolkit's, where the
# build's RUNPATH (this machine's CUDA) does not reach.
if ldd "$BENCH" 2>&1 | grep -qE 'lib(cudart|cufft)[^ ]* => not found'; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
  done
fi
note_missing_libraries "$BENCH"
# The benchmark links libmri_cuda.so and calls it directly: MRI_CUDA_PLUGIN (libmri's dlopen)
# does not choose what it runs; LD_LIBRARY_PATH does. Say which one this run loads.
note "libmri_cuda.so loaded: $(ldd "$BENCH" | awk '/libmri_cuda/ {print $3}')"
[ -n "${MRI_CUDA_PLUGIN:-}" ] && note "MRI_CUDA_PLUGIN=$MRI_CUDA_PLUGIN is not what this benchmark runs (see above)"

t0=$SECONDS
nvidia-smi dmon -s pc -d 1 >"$OUT/dmon.log" 2>&1 &
dmon=$!
timeout 560 "$BENCH" --out "$OUT/nufft_front.csv" "${bench_args[@]}" >"$OUT/nufft_front.log" 2>&1
rc=$?
kill "$dmon" 2>/dev/null
note "SM clock / power during the run (dmon, MHz / W): $(awk '$1 ~ /^[0-9]+$/ {print $5 "/" $2}' "$OUT/dmon.log" | sort | uniq -c | sort -rn | head -6 | tr '\n' ' ')"
note "bench_nufft_front_gpu: rc=$rc ($((SECONDS - t0)) s)"
grep -E '^(#|DISAGREE)' "$OUT/nufft_front.log" | tee -a "$summary"
tail -3 "$OUT/nufft_front.log" | grep -v '^#' | tee -a "$summary"
if [ -s "$OUT/nufft_front.csv" ] && python3 -c 'import matplotlib' 2>/dev/null; then
  python3 tools/docs/plot_nufft_front.py "$OUT/nufft_front.csv" "$OUT/nufft_front_h200.png" >>"$summary" 2>&1
fi
exit $rc
