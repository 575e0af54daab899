#!/usr/bin/env bash
# One device call: GPU tests, compute-sanitizer (memcheck + racecheck) on the quick test subset,
# the F^H D benchmarks and the Tuned kernel's SASS, with logs and JSON under $OUT.
#
#   tools/dev/device-bench.sh [steps...]      steps: build tests sanitize bench ncu sass (default:
#                                           tests sanitize bench sass; `build` configures and
#                                           builds in $BUILD_DIR first, for a machine without
#                                           a prebuilt tree)
# Steps also: demo (the README demo on cuda and cpu), recon (the GPU reconstruction's tests,
# sanitizers, benchmark and example: tools/dev/recon-device.sh, logs under $OUT/recon).
# Environment: BUILD_DIR (default build-gpu), OUT (default ./out), BENCH_FILTER (a
# --benchmark_filter regex, default all), NCU_KERNELS (a regex: profile only those kernels of
# the ncu step), MRI_GPU_TEST_SEED (replay a test failure).
#
# Typical call through the device tool, with the tree built here:
#   run(command="tools/dev/device-bench.sh", carry=["build-gpu"])
# Exit status: non-zero if any step failed (the other steps still run).
set -u -o pipefail
BUILD_DIR=${BUILD_DIR:-build-gpu}
default_steps=(tests sanitize bench sass)
source "$(dirname "$0")/device-common.sh" "$@"
machine_header name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw nvcc --version

if has build; then
  t0=$SECONDS
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" >>"$OUT/build.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "build: rc=$rc ($((SECONDS - t0)) s)"
fi

TESTS="$BUILD_DIR/tests/mri_gpu_tests"
BENCH="$BUILD_DIR/benchmarks/bench_fhd_gpu"
use_build_libraries
# cuBLAS (SeparableGemm): the build's RUNPATH names this machine's CUDA; look where the device has it.
if ldd "$TESTS" 2>&1 | grep -q "libcublas.*not found"; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
    $(python3 -c 'import nvidia.cublas as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null); do
    [ -e "$d/libcublas.so.13" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d" && break
  done
fi
note_missing_libraries "$TESTS" "$BENCH"

if has tests; then
  t0=$SECONDS
  timeout 150 "$TESTS" --durations yes >"$OUT/tests.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "tests: rc=$rc ($((SECONDS - t0)) s): $(grep -E '^(All tests passed|test cases:)' "$OUT/tests.log" | tail -1)"
  grep -E 'rel L2' "$OUT/tests.log" | tee -a "$summary"
fi

if has sanitize; then
  # The [small] subset: every policy on small 2D/3D problems, device-pointer path, forward.
  for tool in memcheck racecheck; do
    t0=$SECONDS
    timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 86 "$TESTS" "[small]" >"$OUT/sanitize-$tool.log" 2>&1
    rc=$?; [ $rc -ne 0 ] && status=1
    note "compute-sanitizer $tool: rc=$rc ($((SECONDS - t0)) s): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$tool.log" | tail -1)"
  done
  cat "$OUT/sanitize-racecheck.log" >>"$OUT/sanitize-memcheck.log" && rm -f "$OUT/sanitize-racecheck.log"
  mv "$OUT/sanitize-memcheck.log" "$OUT/sanitize.log"
fi

if has bench; then
  t0=$SECONDS
  # The card's clocks and power while the benchmark runs (a full FP32 load may hold the SM clock
  # below its maximum: the bounds are measured under the same load, see bench_fhd_gpu's header).
  nvidia-smi dmon -s pc -d 1 >"$OUT/dmon.log" 2>&1 &
  dmon=$!
  timeout 330 "$BENCH" --benchmark_out="$OUT/bench.json" --benchmark_out_format=json \
    ${BENCH_FILTER:+--benchmark_filter="$BENCH_FILTER"} >"$OUT/bench.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  kill "$dmon" 2>/dev/null
  note "SM clock / power under the benchmark (dmon, MHz / W): $(awk '$1 ~ /^[0-9]+$/ {print $5 "/" $2}' "$OUT/dmon.log" | sort | uniq -c | sort -rn | head -6 | tr '\n' ' ')"
  note "bench: rc=$rc ($((SECONDS - t0)) s)"
  sed -n '/^## F^H D stage table/,$p' "$OUT/bench.log" | tee -a "$summary"
fi

if has demo; then
  # The README's demo on the GPU and on the CPU of that machine: same picture, PSNR and phases.
  for backend in cuda cpu; do
    png="$OUT/demo_$backend.png"
    [ "$backend" = cpu ] && png=/tmp/demo_cpu.png # the device tool returns at most 8 files
    timeout 120 "$BUILD_DIR/examples/demo_spiral_2d" --backend "$backend" --out "$png" >"$OUT/demo_$backend.log" 2>&1
    rc=$?; [ $rc -ne 0 ] && status=1
    note "demo ($backend): rc=$rc: $(grep -E '^(backend|PSNR)' "$OUT/demo_$backend.log" | tr '\n' ' ')"
  done
fi

if has ncu; then
  # One launch of each seed stage's kernel on FHD-3D-S and of the Tuned kernels on
  # FHD-3D-L: where the time goes (issue utilisation, stall reasons, pipe utilisation).
  # --clock-control none: leave the card's clocks as they are (METHOD.md).
  t0=$SECONDS
  : >"$OUT/ncu.txt"
  # Benchmark names carry suffixes (/iterations:N/repeats:3/manual_time): match prefixes.
  # spec: kernel regex | benchmark filter | launches of that kernel to skip (warm-up)
  for spec in "scatter_atomic_kernel|^FHD-3D-S/scatter-atomic/|1" "gather_kernel|^FHD-3D-S/gather/|1" \
    "register_kernel|^FHD-3D-S/register/|2" "constant_chunked_kernel|^FHD-3D-S/constant-chunked/|20" \
    "sfu_trig_kernel|^FHD-3D-S/sfu-trig/|20" "tuned_kernel|^FHD-3D-L/tuned/|20" \
    "tuned_kernel|^FHD-3D-L/tuned-variant/symmetric-16x4-occ3-prefetch/|20" \
    "sincos_pair_kernel|^FHD-3D-L/tuned-variant/sincos-per-pair|2"; do
    IFS='|' read -r kernel filter skip <<<"$spec"
    [[ -n "${NCU_KERNELS:-}" && ! "$kernel" =~ $NCU_KERNELS ]] && continue
    echo "######## $kernel ($filter)" >>"$OUT/ncu.txt"
    timeout 90 ncu --clock-control none -k "regex:$kernel" --launch-skip "$skip" --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
      --section InstructionStats --section SourceCounters \
      --metrics sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second \
      "$BENCH" --benchmark_filter="$filter" >>"$OUT/ncu.txt" 2>&1
    echo "ncu rc=$?" >>"$OUT/ncu.txt"
  done
  note "ncu: ($((SECONDS - t0)) s) $(grep -c '^    Section' "$OUT/ncu.txt") sections"
fi

if has sass; then
  # The Tuned kernels' SASS, from the object file of a full build tree or else from libmri (a
  # staged tree, tools/dev/stage-device.sh), kept to the functions named tuned_kernel.
  obj="$BUILD_DIR/cuda/CMakeFiles/mri_cuda.dir/fhd_tuned.cu.o"
  [ -e "$obj" ] || obj="$BUILD_DIR/lib/libmri_cuda.so"
  {
    echo "==== $obj resource usage"
    cuobjdump -res-usage "$obj" 2>&1 | grep -A1 tuned_kernel
    echo "==== SASS"
    cuobjdump -sass "$obj" 2>&1 | awk '/Function :/ {keep = /tuned_kernel/} keep'
  } >"$OUT/sass.txt"
  note "sass: $(grep -c '' "$OUT/sass.txt") lines"
fi

if has recon; then
  OUT="$OUT/recon" BUILD_DIR="$BUILD_DIR" tools/dev/recon-device.sh || status=1
  note "recon: $(tail -1 "$OUT/recon/summary.txt")"
fi

note "status: $status"
exit $status
