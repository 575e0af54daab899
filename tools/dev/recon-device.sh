#!/usr/bin/env bash
# Issue 4's device call (GPU reconstruction), logs and results under $OUT:
#   tests     mri_gpu_tests "[recon]"                       -> recon-tests.log
#   bench     bench_recon_gpu (MRI_BENCH_256=1: + 256^3)    -> bench_recon_gpu.json, bench-recon.log
#   sanitize  compute-sanitizer memcheck on "[recon][small]", racecheck on "[recon][vector-ops]"
#             and "[dirichlet][small]" (the tensor-core spectrum's shared-memory staging and sums)
#   example   examples/koosh_3d (RECON-3D) and the README demo on cuda -> koosh_3d.png, examples.log
#   suite     (not default) the whole GPU suite, and the CPU suite (the [plugin] tests with a
#             device; MRI_TEST_PLUGIN_DIR: the staged plugins; no bart there) -> suite.log
#   compare   (not default) RECON-2D/3D end to end from $BEFORE_DIR (another staged build) and
#             from $BUILD_DIR, alternating, same filter             -> compare-*.json, compare.log
#             (COMPARE_FILTER: another benchmark filter; COMPARE_ROUNDS: rounds, default 2)
#   ncu       (not default) one launch of the tensor-core Dirichlet spectrum in RECON-3D: tensor
#             pipe, issue slots, stall reasons per issued instruction -> ncu-dirichlet.txt
#
#   BUILD_DIR=build-f tools/dev/recon-device.sh [steps...]   (default: tests bench sanitize example)
# through the device tool, with the tree built here: run(command=..., carry=["build-f"]).
# Exit status: non-zero if any step failed (the others still run).
set -u -o pipefail
BUILD_DIR=${BUILD_DIR:-build-f}
default_steps=(tests bench sanitize example)
source "$(dirname "$0")/device-common.sh" "$@"
machine_header name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,memory.used,memory.total

TESTS="$BUILD_DIR/tests/mri_gpu_tests"
BENCH="$BUILD_DIR/benchmarks/bench_recon_gpu"
use_build_libraries
# cuFFT, nvJitLink, cuBLAS: the plugin's RUNPATH names the CUDA of the build machine; look elsewhere
# when that path does not hold them here.
for lib in libcufft.so.12 libnvJitLink.so.13 libcublas.so.13; do
  if ldd "$BUILD_DIR/lib/libmri_cuda.so" 2>&1 | grep -q "$lib => not found"; then
    found=$(find /usr/local /usr/lib /opt -name "$lib" 2>/dev/null | head -1)
    [ -n "$found" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
    note "$lib: not on libmri's RUNPATH here; using ${found:-NOTHING FOUND}"
  fi
done
note_missing_libraries "$TESTS" "$BENCH"

if has tests; then
  t0=$SECONDS
  timeout "${TESTS_TIMEOUT:-100}" "$TESTS" "[recon]" --durations yes >"$OUT/recon-tests.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "tests [recon]: rc=$rc ($((SECONDS - t0)) s): $(grep -E '^(All tests passed|test cases:)' "$OUT/recon-tests.log" | tail -1)"
  grep -E 'rel L2|runs:|PSNR|needs about' "$OUT/recon-tests.log" | sort | uniq -c | head -40 | tee -a "$summary"
  grep -B2 -A12 -E 'FAILED|failed' "$OUT/recon-tests.log" | head -120 | tee -a "$summary"
fi

if has suite; then
  t0=$SECONDS
  timeout "${SUITE_TIMEOUT:-300}" "$TESTS" --durations yes >"$OUT/suite.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "GPU suite: rc=$rc ($((SECONDS - t0)) s): $(grep -E '^(All tests passed|test cases:)' "$OUT/suite.log" | tail -1)"
  t0=$SECONDS
  # ~*bart*, ~[cli], ~[ismrmrd], ~[mpi]: the device machine has no `bart`, no ismrmrd-tools, no
  # mpirun, and the tests look for `mri` where it was built (CI runs those)
  MRI_TEST_PLUGIN_DIR="$PWD/$BUILD_DIR/lib" timeout 300 "$BUILD_DIR/tests/mri_tests" "~[cli]~[ismrmrd]~[mpi]~*bart*" >>"$OUT/suite.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "CPU suite (plugin tests with a device): rc=$rc ($((SECONDS - t0)) s): $(grep -E '^(All tests passed|test cases:)' "$OUT/suite.log" | tail -1)"
  grep -B2 -A12 -E 'FAILED' "$OUT/suite.log" | head -80 | tee -a "$summary"
fi

if has compare; then
  filter=${COMPARE_FILTER:-'^RECON-(2D|3D)/end-to-end/'}
  for round in $(seq "${COMPARE_ROUNDS:-2}"); do
    for side in before after; do
      dir=$BUILD_DIR; [ $side = before ] && dir=$BEFORE_DIR
      LD_LIBRARY_PATH="$PWD/$dir/lib:$PWD/$dir/runtime-libs:$LD_LIBRARY_PATH" timeout 120 "$dir/benchmarks/bench_recon_gpu" \
        --benchmark_filter="$filter" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
        --benchmark_out="$OUT/compare-$side-$round.json" --benchmark_out_format=json >>"$OUT/compare.log" 2>&1
      rc=$?; [ $rc -ne 0 ] && status=1
      note "compare $side round $round: rc=$rc $(grep -E 'median' "$OUT/compare.log" | tail -4 | awk '{ printf "%s %s %s; ", $1, $2, $3 }')"
    done
  done
fi

if has bench; then
  t0=$SECONDS
  MRI_BENCH_256=${MRI_BENCH_256:-1} timeout "${BENCH_TIMEOUT:-120}" "$BENCH" --benchmark_out="$OUT/bench_recon_gpu.json" \
    --benchmark_out_format=json ${BENCH_FILTER:+--benchmark_filter="$BENCH_FILTER"} >"$OUT/bench-recon.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "bench: rc=$rc ($((SECONDS - t0)) s)"
  grep -vE '^\s*$' "$OUT/bench-recon.log" | grep -E 'median|Copy|cuFFT|direct|256|Amdahl|problem|RECON|%|FAILED|device' | tee -a "$summary"
fi

if has sanitize; then
  t0=$SECONDS
  timeout "${SANITIZE_TIMEOUT:-90}" compute-sanitizer --tool memcheck --error-exitcode 86 "$TESTS" "${MEMCHECK_SUBSET:-[recon][small]}" >"$OUT/sanitize.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "compute-sanitizer memcheck ${MEMCHECK_SUBSET:-[recon][small]}: rc=$rc ($((SECONDS - t0)) s): $(grep -E 'ERROR SUMMARY' "$OUT/sanitize.log" | tail -1) $(grep -E '^(All tests passed|test cases:)' "$OUT/sanitize.log" | tail -1)"
  t0=$SECONDS
  for subset in "[recon][vector-ops]" "[dirichlet][small]"; do
    t0=$SECONDS
    timeout "${RACECHECK_TIMEOUT:-60}" compute-sanitizer --tool racecheck --error-exitcode 86 "$TESTS" "$subset" >>"$OUT/sanitize.log" 2>&1
    rc=$?; [ $rc -ne 0 ] && status=1
    note "compute-sanitizer racecheck $subset: rc=$rc ($((SECONDS - t0)) s): $(grep -E 'RACECHECK SUMMARY' "$OUT/sanitize.log" | tail -1)"
  done
  grep -E '^=========' "$OUT/sanitize.log" | grep -v "SUMMARY" | head -20 | tee -a "$summary"
fi

if has example; then
  t0=$SECONDS
  {
    timeout 60 "$BUILD_DIR/examples/koosh_3d" --out "$OUT/koosh_3d.png"
    echo "koosh_3d rc=$?"
    timeout 30 "$BUILD_DIR/examples/demo_spiral_2d" --backend cuda --out /tmp/demo_cuda.png
    echo "demo rc=$?"
  } >"$OUT/examples.log" 2>&1
  grep -q "koosh_3d rc=0" "$OUT/examples.log" && grep -q "demo rc=0" "$OUT/examples.log" || status=1
  note "examples ($((SECONDS - t0)) s):"
  grep -E '^(backend|PSNR|grid|koosh|demo|error)' "$OUT/examples.log" | tee -a "$summary"
fi

if has ncu; then
  # --clock-control none: leave the card's clocks as they are (METHOD.md).
  timeout 200 ncu --clock-control none -k regex:dirichlet_mma_kernel --launch-skip 0 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
    "$BENCH" --benchmark_filter='^RECON-3D/end-to-end/' --benchmark_repetitions=1 >"$OUT/ncu-dirichlet.txt" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "ncu dirichlet_mma_kernel: rc=$rc $(grep -E 'pipe_tensor|issue_active|Duration|stalled_(wait|math|mio|short|dispatch|barrier)' "$OUT/ncu-dirichlet.txt" | tr -s ' ' | tr '\n' ';')"
fi

note "status: $status"
exit $status
