#!/usr/bin/env bash
# Where the Tuned F^H D kernel's issue slots go: ncu (full set, source-level warp-stall sampling)
# on one launch of each named Tuned variant on FHD-3D-L, exported per SASS instruction.
#   tools/dev/profile-tuned.sh [variant-name...]   (default: symmetric-16x4-occ3, the default)
# Environment: BUILD_DIR (default build-gpu; a staged .devstage works), OUT (default ./out).
# Output: $OUT/ncu-<variant>.txt (details) and $OUT/ncu-<variant>-sass.csv (stall samples per
# SASS instruction). The benchmark's first launches are skipped (warm-up).
set -u -o pipefail
BUILD_DIR=${BUILD_DIR:-build-gpu}
default_steps=()
source "$(dirname "$0")/device-common.sh"
use_build_libraries
BENCH="$BUILD_DIR/benchmarks/bench_fhd_gpu"
variants=("$@")
[ ${#variants[@]} -eq 0 ] && variants=(symmetric-16x4-occ3)
for v in "${variants[@]}"; do
  t0=$SECONDS
  timeout 200 ncu --clock-control none --set full --import-source no -k regex:tuned_kernel --launch-skip 20 \
    --launch-count 1 -o "$OUT/ncu-$v" -f "$BENCH" --benchmark_filter="^FHD-3D-L/tuned-variant/$v/" >"$OUT/ncu-$v.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  ncu --import "$OUT/ncu-$v.ncu-rep" --print-details all >"$OUT/ncu-$v.txt" 2>&1
  ncu --import "$OUT/ncu-$v.ncu-rep" --page source --print-source sass --csv >"$OUT/ncu-$v-sass.csv" 2>&1
  rm -f "$OUT/ncu-$v.ncu-rep" "$OUT/ncu-$v.log"
  note "ncu $v: rc=$rc ($((SECONDS - t0)) s), $(grep -E 'Issue Slots Busy' "$OUT/ncu-$v.txt" | head -1)"
done
exit $status
