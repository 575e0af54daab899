#!/usr/bin/env bash
# A/B of two whole builds (libraries and benchmarks, not only libmri_cuda: tools/dev/device-ab.sh
# swaps the plugin alone) plus the GPU suite and its whole-suite memcheck, in one device call.
#
#   tools/dev/ab-builds.sh stage BASE_BUILD NEW_BUILD   here: copies into .devstage/{base,new}
#   run(command="tools/dev/ab-builds.sh run", carry=[".devstage"], timeout_s=600)   on the device
#
# Both builds must be configured with -DMRI_CUFINUFFT_DIR (bench_nufft_front_gpu links cuFINUFFT;
# it runs with --peer none here). The run: the new build's GPU suite, its hidden [nccl] case, memcheck
# of the whole suite at sanitizer sizes, then base/new alternated twice (rep 1 base first, rep 2 new
# first): bench_recon_gpu RECON-3D (end-to-end, nufft) and RECON-2D-MC/nufft, bench_nufft_cpu
# RECON2DMC_fhd on 2 host threads, bench_nufft_front_gpu at tolerance 1e-3. $OUT gets summary.txt,
# machine.txt, gpu_suite.log, gpu_nccl.log, memcheck_sized.log, ab.log and front.csv (7 files: the
# device tool returns at most 8).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
S=$PWD/.devstage
BENCHES=(bench_recon_gpu bench_nufft_front_gpu bench_nufft_cpu)

stage() {
  local base=$1 new=$2 v b
  rm -rf "$S"
  mkdir -p "$S/runtime-libs" "$S/peer" "$S/new/tests"
  for v in base new; do
    b=$base; [ $v = new ] && b=$new
    mkdir -p "$S/$v/lib" "$S/$v/benchmarks"
    cp -L "$b"/lib/libmri.so.0 "$b"/lib/libmri_cuda.so "$S/$v/lib/"
    for bench in "${BENCHES[@]}"; do cp "$b/benchmarks/$bench" "$S/$v/benchmarks/"; done
  done
  cp "$new"/tests/libmri_fake_cuda_plugin.so "$S/new/lib/"
  cp "$new"/tests/mri_gpu_tests "$S/new/tests/"
  local peer
  peer=$(sed -n 's/^MRI_CUFINUFFT_DIR:[A-Z]*=//p' "$new/CMakeCache.txt")
  xz -T2 -c "$peer/libcufinufft.so" >"$S/peer/libcufinufft.so.xz"
  cp -L /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian "$S/runtime-libs/"
  ldd "$new"/lib/libmri.so.0 "$new"/tests/mri_gpu_tests "${BENCHES[@]/#/$new/benchmarks/}" | awk '$3 ~ /^\// {print $3}' |
    grep -vE '/libmri|/libcufinufft|/libc\.so|/libm\.so|/libstdc\+\+|/libgcc_s|/ld-linux|/libgomp|/libdl|/libpthread|/librt|/cuda' |
    sort -u | xargs -r -I{} cp -L {} "$S/runtime-libs/"
  du -sh "$S"
}

lib_path() { echo "$S/$1/lib:$S/peer:$S/runtime-libs:/usr/local/cuda/lib64"; }

ab() { # ab REP VARIANT
  local rep=$1 v=$2 B=$S/$2/benchmarks
  export LD_LIBRARY_PATH=$(lib_path "$v")
  echo "== rep $rep $v $(date -u +%T)" >>"$OUT/ab.log"
  "$B/bench_recon_gpu" --benchmark_filter='^RECON-3D/(end-to-end|nufft)|^RECON-2D-MC/nufft' --benchmark_format=csv \
    2>>"$OUT/ab.log" | grep -E 'median|^name' | sed "s/^/$v,$rep,/" >>"$OUT/ab.log"
  OMP_NUM_THREADS=2 "$B/bench_nufft_cpu" --benchmark_filter='RECON2DMC_fhd' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=csv 2>>"$OUT/ab.log" | grep median |
    sed "s/^/$v,$rep,cpu2,/" >>"$OUT/ab.log"
  timeout 100 "$B/bench_nufft_front_gpu" --tolerances 1e-3 --peer none --out /tmp/front.csv >/tmp/front.log 2>&1
  echo "$v,$rep,front rc=$?" >>"$OUT/ab.log"
  tail -2 /tmp/front.log >>"$OUT/ab.log"
  sed "s/^/$v,$rep,/" /tmp/front.csv >>"$OUT/front.csv"
}

# On the device: $OUT (default ./out) and the unpacked peer library.
prepare_device() {
  OUT=${OUT:-$PWD/out}
  mkdir -p "$OUT"
  (cd "$S/peer" && xz -dkf libcufinufft.so.xz)
}
run() {
  prepare_device
  local T=$S/new/tests/mri_gpu_tests
  {
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
    lscpu | grep 'Model name'
    for v in base new; do
      echo "== $v"
      LD_LIBRARY_PATH=$(lib_path $v) ldd "$S/$v/benchmarks/bench_recon_gpu" | grep -E 'mri|cufinufft|not found'
    done
  } >"$OUT/machine.txt" 2>&1
  export LD_LIBRARY_PATH=$(lib_path new)
  (time "$T" --durations yes) >"$OUT/gpu_suite.log" 2>&1
  echo "gpu suite rc=$?" >>"$OUT/summary.txt"
  grep -E '^test cases|^All tests' "$OUT/gpu_suite.log" >>"$OUT/summary.txt"
  "$T" "[nccl]" >"$OUT/gpu_nccl.log" 2>&1
  echo "nccl rc=$?" >>"$OUT/summary.txt"
  (time MRI_TEST_UNDER_SANITIZER=1 timeout 180 compute-sanitizer --tool memcheck --error-exitcode 1 "$T") \
    >"$OUT/memcheck_sized.log" 2>&1
  echo "memcheck whole suite (MRI_TEST_UNDER_SANITIZER=1) rc=$?" >>"$OUT/summary.txt"
  grep -E '^test cases|^All tests|ERROR SUMMARY' "$OUT/memcheck_sized.log" >>"$OUT/summary.txt"
  ab 1 base; ab 1 new; ab 2 new; ab 2 base
  cat "$OUT/summary.txt"
}

# The sparse reconstruction on the new build alone: its GPU tests, their memcheck, and RECON-3D-MC
# by CG and by the proximal solvers (bench_recon_gpu). $OUT: sparse.log, sparse_memcheck.log,
# sparse_bench.csv.
sparse() {
  prepare_device
  export LD_LIBRARY_PATH=$(lib_path new)
  local T=$S/new/tests/mri_gpu_tests
  { nvidia-smi --query-gpu=name,driver_version --format=csv; date -u; "$T" "[sparse]" --durations yes; echo "rc=$?"; } \
    >"$OUT/sparse.log" 2>&1
  compute-sanitizer --tool memcheck --error-exitcode 1 "$T" "[sparse][small]" >"$OUT/sparse_memcheck.log" 2>&1
  echo "memcheck rc=$?" >>"$OUT/sparse_memcheck.log"
  "$S/new/benchmarks/bench_recon_gpu" --benchmark_filter='^RECON-3D-MC/nufft' --benchmark_format=csv \
    >"$OUT/sparse_bench.csv" 2>>"$OUT/sparse.log"
  tail -5 "$OUT/sparse.log"
  grep -E 'median|name' "$OUT/sparse_bench.csv" | cut -c1-220
}

# The new build's whole GPU suite, plainly (no memcheck, no A/B). $OUT: gpu_suite.log.
suite() {
  prepare_device
  export LD_LIBRARY_PATH=$(lib_path new)
  { nvidia-smi --query-gpu=name,driver_version --format=csv; date -u; time "$S/new/tests/mri_gpu_tests" --durations yes; echo "rc=$?"; } \
    >"$OUT/gpu_suite.log" 2>&1
  grep -E '^test cases|^All tests|^rc=' "$OUT/gpu_suite.log"
}
case "${1:-}" in
stage) stage "$2" "$3" ;;
run) run ;;
sparse) sparse ;;
suite) suite ;;
*) echo "usage: $0 stage BASE_BUILD NEW_BUILD | run | sparse | suite" >&2; exit 1 ;;
esac
