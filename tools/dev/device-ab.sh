#!/usr/bin/env bash
# A/B of libmri_cuda builds in one device call: each variant's bench_nufft_front_gpu run, the
# variants alternated (rep 1 in the order given, rep 2 reversed, ...), so that clock and
# temperature drift falls on all of them alike; optionally the whole GPU suite and the sanitizers
# on chosen variants first. Results under $OUT: ab.csv (the benchmark's CSV rows with call, variant
# and rep in front: tools/docs/variant_table.py makes the RGA / SM tables from it), one log a run,
# summary.txt.
#
# The benchmarks and tests link libmri_cuda.so directly (RUNPATH), and libmri also dlopens it as
# its CUDA backend (the file next to libmri, or $MRI_CUDA_PLUGIN). A variant is chosen both ways:
# its folder first on LD_LIBRARY_PATH and MRI_CUDA_PLUGIN naming the same file, so that one copy
# is loaded (two files would be two copies: plans made by one, run by the other). Each run logs
# the library that ldd resolves, so a run of the wrong build shows in its log.
#
# Here: build each variant and keep its library,
#   cp -L build-gpu/lib/libmri_cuda.so /tmp/var/lib_NAME/       (one folder a variant)
# stage the rest without the build's own libmri_cuda.so and pack the variants (a device call
# carries 64 MiB; about 5 MB a variant packed),
#   tools/dev/stage-device.sh build-gpu front; rm .devstage/lib/libmri_cuda.so
#   mkdir -p .devstage/tests && cp build-gpu/tests/mri_gpu_tests .devstage/tests/
#   (cd /tmp/var && tar -cJf "$OLDPWD/.devstage/variants.tar.xz" lib_*)
# then: run(command="tools/dev/device-ab.sh --tests bal --reps 2 main bal", carry=[".devstage"])
#
#   tools/dev/device-ab.sh [--call N] [--reps N] [--geometries LIST] [--tolerances LIST] [--peer LIST]
#                        [--tests V,...] [--sanitize V,...] [--recon FILTER] VARIANT...
#   --tests V,...  the whole GPU suite (mri_gpu_tests) on each variant V first
#   --sanitize V,... compute-sanitizer memcheck and racecheck of "[gridding][small]" on each
#                  (MRI_TEST_UNDER_SANITIZER=1: the cases sized for throughput run smaller)
#   --recon F      after the fronts, bench_recon_gpu --benchmark_filter=F on each variant (staged
#                  with libbenchmark.so.1debian in .devstage/runtime-libs)
#   --peer M,...   the cuFINUFFT methods each front run times too (default none: ours alone, which
#                  is what an A/B of our builds compares, without the peer's share of device time)
#   defaults: call 1, reps 2, geometries uniform3d,koosh3d, tolerances 3e-2,1e-2,1e-3,1e-4,1e-5
# Exit status: 1 if a step failed (the others still run).
set -u -o pipefail
BUILD_DIR=.devstage
call=1 reps=2 geometries=uniform3d,koosh3d tolerances=3e-2,1e-2,1e-3,1e-4,1e-5 tests='' sanitize='' recon='' peer=none
variants=()
while [ $# -gt 0 ]; do
  case "$1" in
  --call) call=$2; shift 2 ;;
  --reps) reps=$2; shift 2 ;;
  --geometries) geometries=$2; shift 2 ;;
  --tolerances) tolerances=$2; shift 2 ;;
  --tests) tests=$2; shift 2 ;;
  --sanitize) sanitize=$2; shift 2 ;;
  --recon) recon=$2; shift 2 ;;
  --peer) peer=$2; shift 2 ;;
  -*) echo "device-ab.sh: unknown option $1" >&2; exit 2 ;;
  *) variants+=("$1"); shift ;;
  esac
done
set -- # device-common.sh reads steps from the arguments: this script has none
default_steps=(ab)
source "$(dirname "$0")/device-common.sh"
export PATH=/usr/local/cuda/bin:$PATH # compute-sanitizer
machine_header name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw

# The variants unpacked outside the checkout (a local dry run would otherwise carry them next time)
# and outside $OUT (which comes back).
variants_dir=$BUILD_DIR
if [ -f "$BUILD_DIR/variants.tar.xz" ]; then
  variants_dir=$(mktemp -d)
  trap 'rm -rf "$variants_dir"' EXIT
  tar -C "$variants_dir" -xJf "$BUILD_DIR/variants.tar.xz"
fi
for v in "${variants[@]}" ${tests//,/ } ${sanitize//,/ }; do
  if [ ! -f "$variants_dir/lib_$v/libmri_cuda.so" ]; then
    note "no lib_$v/libmri_cuda.so in $variants_dir"
    exit 1
  fi
done

# LD_LIBRARY_PATH for variant $1: its library first, then the stage's own and the toolkit's.
library_path() {
  echo "$variants_dir/lib_$1:$PWD/$BUILD_DIR/lib:$PWD/$BUILD_DIR/runtime-libs:/usr/local/cuda/lib64"
}
# with_variant V BINARY COMMAND...: runs COMMAND with variant V's library, noting which
# libmri_cuda.so BINARY resolves.
with_variant() {
  local v=$1 binary=$2
  shift 2
  note "$v: $(LD_LIBRARY_PATH=$(library_path "$v") ldd "$binary" | grep libmri_cuda)"
  LD_LIBRARY_PATH=$(library_path "$v") MRI_CUDA_PLUGIN=$variants_dir/lib_$v/libmri_cuda.so \
    MRI_TEST_PLUGIN_DIR=$PWD/$BUILD_DIR/lib "$@"
}

step() { # name, command...: runs it, notes its status and time
  local name=$1 t0=$SECONDS rc
  shift
  "$@"
  rc=$?
  [ $rc -ne 0 ] && status=1
  note "$name: rc=$rc ($((SECONDS - t0)) s)"
}

TESTS=$BUILD_DIR/tests/mri_gpu_tests
for v in ${tests//,/ }; do
  log="$OUT/tests_$v.log"
  step "tests on $v" with_variant "$v" "$TESTS" timeout 300 "$TESTS" >"$log" 2>&1
  tail -2 "$log" | tee -a "$summary"
  grep -E "FAILED" -A14 "$log" | head -40 | tee -a "$summary"
  grep "gpu.memory_limit:" "$log" | tee -a "$summary"
done
export MRI_TEST_UNDER_SANITIZER=1
for v in ${sanitize//,/ }; do
  for tool in memcheck racecheck; do
    log="$OUT/${tool}_$v.log"
    step "$tool on $v" with_variant "$v" "$TESTS" timeout 240 compute-sanitizer --tool "$tool" \
      --error-exitcode 9 "$TESTS" "[gridding][small]" >"$log" 2>&1
    grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test cases' "$log" | tail -2 | tee -a "$summary"
  done
done
unset MRI_TEST_UNDER_SANITIZER

BENCH=$BUILD_DIR/benchmarks/bench_nufft_front_gpu
: >"$OUT/ab.csv"
for ((rep = 1; rep <= reps; ++rep)); do
  order=("${variants[@]}")
  if ((rep % 2 == 0)); then
    order=()
    for ((i = ${#variants[@]} - 1; i >= 0; --i)); do order+=("${variants[i]}"); done
  fi
  for v in "${order[@]}"; do
    csv="$OUT/front_${v}_$rep.csv"
    step "front $v rep $rep" with_variant "$v" "$BENCH" "$BENCH" --out "$csv" --geometries "$geometries" \
      --tolerances "$tolerances" --peer "$peer" >"$OUT/front_${v}_$rep.log" 2>&1
    [ -s "$csv" ] || continue
    [ -s "$OUT/ab.csv" ] || echo "call,variant,rep,$(head -1 "$csv")" >"$OUT/ab.csv"
    tail -n +2 "$csv" | sed "s/^/$call,$v,$rep,/" >>"$OUT/ab.csv"
  done
done
RECON=$BUILD_DIR/benchmarks/bench_recon_gpu
if [ -n "$recon" ]; then
  for v in "${variants[@]}"; do
    step "recon $v" with_variant "$v" "$RECON" "$RECON" --benchmark_filter="$recon" \
      --benchmark_out="$OUT/recon_$v.json" --benchmark_out_format=json >"$OUT/recon_$v.log" 2>&1
    grep -E "^RECON" "$OUT/recon_$v.log" | tee -a "$summary"
  done
fi
[ -s "$OUT/ab.csv" ] && python3 tools/docs/variant_table.py "$OUT/ab.csv" | tee -a "$summary"
exit $status
