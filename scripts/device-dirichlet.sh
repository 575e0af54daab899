#!/usr/bin/env bash
# One device call for the tensor-core Dirichlet spectrum (cuda/dirichlet_spectrum.cu): all GPU
# tests, compute-sanitizer memcheck + racecheck on its tests, the RECON-3D/2D end-to-end
# benchmarks (Q by Dirichlet vs by Tuned, the Amdahl split) and ncu on one Dirichlet launch of
# RECON-3D.
#   BUILD_DIR=.devstage scripts/device-dirichlet.sh [steps...]   steps: tests sanitize bench ncu
# Logs under $OUT (default ./out).
set -u -o pipefail
BUILD_DIR=${BUILD_DIR:-build-gpu}
default_steps=(tests sanitize bench ncu)
source "$(dirname "$0")/device-common.sh" "$@"
machine_header name,driver_version,clocks.sm,clocks.max.sm,power.draw
use_build_libraries
TESTS="$BUILD_DIR/tests/mri_gpu_tests"
BENCH="$BUILD_DIR/benchmarks/bench_recon_gpu"
if has tests; then
  timeout 200 "$TESTS" --durations yes >"$OUT/tests.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "tests: rc=$rc: $(grep -E '^(All tests passed|test cases:)' "$OUT/tests.log" | tail -1)"
  grep -E "dirichlet vs" "$OUT/tests.log" | tee -a "$summary"
fi
if has sanitize; then
  for tool in memcheck racecheck; do
    timeout 200 compute-sanitizer --tool "$tool" --error-exitcode 86 "$TESTS" "[dirichlet]" >"$OUT/sanitize-$tool.log" 2>&1
    rc=$?; [ $rc -ne 0 ] && status=1
    note "compute-sanitizer $tool [dirichlet]: rc=$rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$tool.log" | tail -1)"
  done
fi
if has bench; then
  timeout 300 "$BENCH" --benchmark_filter="${BENCH_FILTER:-RECON-(3D|2D)/end-to-end}" \
    --benchmark_out="$OUT/bench_recon.json" --benchmark_out_format=json >"$OUT/bench_recon.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "bench: rc=$rc"
  sed -n '/^## Amdahl/,$p' "$OUT/bench_recon.log" | tee -a "$summary"
fi
if has ncu; then
  timeout 200 ncu --clock-control none -k regex:dirichlet_mma_kernel --launch-skip 0 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats \
    --section Occupancy --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
    "$BENCH" --benchmark_filter='^RECON-3D/end-to-end/' --benchmark_repetitions=1 >"$OUT/ncu.txt" 2>&1
  note "ncu: rc=$? $(grep -E 'pipe_tensor|issue_active|Duration|stalled_(long|short|wait|math|dispatch|barrier|mio|not_sel|no_inst)' "$OUT/ncu.txt" | tr -s ' ' | tr '\n' ';')"
fi
note "status: $status"
exit $status
