#!/usr/bin/env bash
# Issue 14 item 1 on the device: compute-sanitizer's memcheck, racecheck, synccheck and initcheck
# over the whole GPU suite (tests/gpu), logs and a summary under $OUT.
#   BUILD_DIR=.devstage [TOOLS="memcheck racecheck synccheck initcheck"] [LIMIT=540] [SHARDS=...] \
#     scripts/sanitize-gpu.sh
# Every tool runs on the suite in shards of its source files (Catch2's -# tags every test case
# with its file: "[#test_gridding]"; v2, which CI builds with, has no --shard-count), all tools and
# shards side by side, each process for at most LIMIT seconds. Measured (H200 host, 16 cores,
# 2026-12-01 19:49 UTC): 4 tools x 6 shards side by side took the host's cores and 12 of the 24
# processes ran out of 500 s, where memcheck of the whole suite alone takes ~150 s; racecheck is
# the slow tool (the motion test: 264 s for one of its 16 sections). Run one tool per call
# (TOOLS=racecheck SHARDS='[#test_motion_cuda]' for the slowest) within the device tool's
# 10-minute calls. The [reliability] cases measure the device memory in use by
# every process (leaks, the memory limit), so they cannot share the device: they run afterwards,
# alone, under each of RELIABILITY_TOOLS in turn (default memcheck; RELIABILITY_LIMIT seconds
# each; 0 skips them).
# MRI_TEST_UNDER_SANITIZER=1 is exported: the few cases sized for throughput run smaller
# (tests/gpu/under_sanitizer.hpp says which, each prints what it ran).
# A shard passes when its tool reports 0 errors / hazards and every test passed; one that ran out
# of time is reported as such with the test cases it finished (not as clean).
set -u -o pipefail
BUILD_DIR=${BUILD_DIR:-.devstage}
default_steps=(all)
source "$(dirname "$0")/../tools/dev/device-common.sh"
machine_header name,driver_version,memory.total "compute-sanitizer" --version
use_build_libraries
TESTS="$BUILD_DIR/tests/mri_gpu_tests"
export MRI_TEST_UNDER_SANITIZER=1
tools=(${TOOLS:-memcheck racecheck synccheck initcheck})
limit=${LIMIT:-540}
# The shards: one per file of tests/gpu (the suite's own "[#file]" tags, so a new file is never
# left out) but the reliability tests (below). SHARDS (environment): the shards to run instead,
# separated by ';'.
mapfile -t shards < <("$TESTS" -# --list-tags | grep -oE '\[#test_[a-z0-9_]+\]' | grep -v '#test_reliability' | sort -u)
[ -n "${SHARDS:-}" ] && IFS=';' read -r -a shards <<<"$SHARDS"
[ ${#shards[@]} -gt 0 ] || { note "no shard: $TESTS --list-tags named no test file"; exit 1; }

# Extra options per tool: racecheck reports hazards of every severity (warnings too), in our
# kernels only (RACECHECK_KERNELS, a compute-sanitizer kernel filter: every kernel of ours is in
# namespace mri, so its mangled name holds "mri"). Why not NVIDIA's: racecheck's host-side shadow
# state for cuBLAS's GEMMs and cuFFT's kernels grew one test process to 100 GB, and the host's OOM
# killer ended it (docs/history.md, "Reliability (history)", 2026-12-02 05:41); their shared
# memory is not ours to fix.
# RACECHECK_KERNELS=all checks every kernel.
racecheck_kernels=${RACECHECK_KERNELS:-kns=mri}
tool_options() {
  case $1 in
    racecheck)
      echo "--racecheck-report all"
      [ "$racecheck_kernels" != all ] && echo "--kernel-name $racecheck_kernels" ;;
    *) echo "" ;;
  esac
}

# memcheck reports the CUDA API errors a library makes and handles itself: NCCL's probes of its
# kernels for other architectures (cudaFuncGetAttributes: "no kernel image", 4 per communicator,
# H200 2026-12-02). The [nccl] cases run apart, with API errors not reported (nccl_memcheck).
shard_spec() { # tool shard
  # Catch2 reads "<tags>~[nccl]" as "and not [nccl]"; after a test name the '~' would be part of it.
  if [ "$1" = memcheck ] && [ "${2:0:1}" = "[" ]; then echo "$2~[nccl]"; else echo "$2"; fi
}

run_shard() { # tool index
  local tool=$1 i=$2 log="$OUT/$1-$2.log"
  # /usr/bin/time: the shard's peak host memory (racecheck's shadow state; the host has 128 GB).
  /usr/bin/time -f "peak host memory %M kB" -o "$OUT/$tool-$i.rss" \
    timeout "$limit" compute-sanitizer --tool "$tool" $(tool_options "$tool") --error-exitcode 86 \
    "$TESTS" -# "$(shard_spec "$tool" "${shards[$i]}")" --durations yes >"$log" 2>&1
  echo $? >"$OUT/$tool-$i.rc"
}

t0=$SECONDS
for tool in "${tools[@]}"; do
  for i in "${!shards[@]}"; do run_shard "$tool" "$i" & done
done
wait
for tool in "${tools[@]}"; do
  for i in "${!shards[@]}"; do
    log="$OUT/$tool-$i.log"
    rc=$(cat "$OUT/$tool-$i.rc")
    cases=$(grep -cE '^[0-9.]+ s: ' "$log")
    verdict=$(grep -E '(ERROR|RACECHECK|SYNCCHECK|INITCHECK) SUMMARY' "$log" | tail -1)
    result=$(grep -E '^(All tests passed|test cases:)' "$log" | tail -1)
    case $rc in
      0) # Catch2 exits 0 when the shard's spec matches no test case (a '*' inside a name does)
        [ -z "$result" ] && { verdict="NO TEST CASE RAN (check the shard's spec): ${verdict}"; status=1; } ;;
      124) verdict="TIMED OUT after $limit s ($cases test-case timings printed)"; status=1 ;;
      *) status=1 ;;
    esac
    note "$tool ${shards[$i]}: rc=$rc: ${verdict:-no summary} ${result} ($(tail -1 "$OUT/$tool-$i.rss"))"
    grep -E '^========= (Invalid|Race|Barrier|Uninitialized|Error|Warning)' "$log" | sort | uniq -c | head -5 | tee -a "$summary"
  done
done
note "side by side: $((SECONDS - t0)) s"

if [[ " ${tools[*]} " == *" memcheck "* ]]; then
  timeout "$limit" compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 86 "$TESTS" "[nccl]" \
    --durations yes >"$OUT/memcheck-nccl.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  note "memcheck [nccl] (API errors not reported): rc=$rc: $(grep -E 'ERROR SUMMARY' "$OUT/memcheck-nccl.log" | tail -1) $(grep -E '^(All tests passed|test cases:)' "$OUT/memcheck-nccl.log" | tail -1)"
fi

if [ "${RELIABILITY_LIMIT:-240}" != 0 ]; then
  for tool in ${RELIABILITY_TOOLS:-memcheck}; do
    t0=$SECONDS log="$OUT/$tool-reliability.log"
    timeout "${RELIABILITY_LIMIT:-240}" compute-sanitizer --tool "$tool" $(tool_options "$tool") --error-exitcode 86 \
      "$TESTS" "[reliability]" --durations yes >"$log" 2>&1
    rc=$?; [ $rc -ne 0 ] && status=1
    note "$tool [reliability] alone: rc=$rc ($((SECONDS - t0)) s): $(grep -E '(ERROR|RACECHECK|SYNCCHECK|INITCHECK) SUMMARY' "$log" | tail -1) $(grep -E '^(All tests passed|test cases:)' "$log" | tail -1)"
  done
fi
# One archive of the logs: the device tool fetches a limited number of files.
tar -C "$OUT" -czf "$OUT/sanitize-logs.tar.gz" --remove-files $(cd "$OUT" && ls ./*.log ./*.rc ./*.rss 2>/dev/null)
exit $status
