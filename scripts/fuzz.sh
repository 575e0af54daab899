#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/) with clang, ASan and UBSan in ./build-fuzz and runs
# each for RUNS executions (default 10^7) or SECONDS_LIMIT seconds (environment; default 3600),
# whichever comes first, niced, one after the other (one script per harness runs them side by
# side). New inputs go to build-fuzz/corpus/<harness> (not committed); a crash lands in
# build-fuzz/artifacts/<harness>/: copy it to tests/fuzz/regressions/<harness>/, fix the reader,
# and ctest replays it from then on.
#   [FUZZ_FLAGS=...] scripts/fuzz.sh [RUNS] [harness...]
# FUZZ_FLAGS: more libFuzzer flags, e.g. "-fork=1 -ignore_timeouts=1 -timeout=30" to go on past
# a hang inside a library (HDF5 1.10.8's global heap loop, guarded since: docs/reliability.md),
# or "-fork=1 -ignore_crashes=1" past a crash not fixed yet. Fork mode's first jobs cost
# ismrmrd_reader 3x the CPU per execution (each job restarts and reruns the corpus).
#   (harnesses: cfl_reader q_cache_reader ismrmrd_reader nifti_reader cli_options)
# The figures of docs/reliability.md come from this script's logs (build-fuzz/<harness>.log).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs="${1:-10000000}"
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(cfl_reader q_cache_reader ismrmrd_reader nifti_reader cli_options)
seconds="${SECONDS_LIMIT:-3600}"
"$root/scripts/install-deps.sh"
build="$root/build-fuzz"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
  -DMRI_ENABLE_CUDA=OFF -DMRI_BUILD_BENCHMARKS=OFF -DMRI_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF \
  -DMRI_BUILD_FUZZERS=ON
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build "$build" -j 1 --target "${targets[@]}" # -j 1: the machine's 2 cores are shared
# The readers take paths: keep the millions of small files in memory.
export TMPDIR=/dev/shm
# HDF5's own leaks on damaged files are not findings (tests/fuzz/lsan.supp).
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp"
for h in "${harnesses[@]}"; do
  mkdir -p "$build/corpus/$h" "$build/artifacts/$h"
  # One worker (the machine's 2 cores are shared); a fixed seed makes a run repeatable.
  # -timeout: an input that runs 5 minutes is a hang (niced, one took 61 s on the loaded machine).
  if ! nice -n 19 "$build/tests/fuzz/fuzz_$h" -runs="$runs" -max_total_time="$seconds" -timeout=300 \
      -seed=1 -print_final_stats=1 ${FUZZ_FLAGS:-} \
      -artifact_prefix="$build/artifacts/$h/" "$build/corpus/$h" "$root/tests/fuzz/corpus/$h" \
      > "$build/$h.log" 2>&1; then
    tail -n 40 "$build/$h.log"
    echo "fuzz_$h found a crash: see $build/artifacts/$h/"
    exit 1
  fi
  grep -E "INITED|DONE|stat::|exiting" "$build/$h.log" || true # fork mode prints no stat:: lines
done
