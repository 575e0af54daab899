#!/usr/bin/env bash
# The CPU library and tests under sanitizers; any finding fails (exit status non-zero).
#  1. ASan + UBSan (-fno-sanitize-recover=all: the first UB report aborts; LeakSanitizer on):
#     libmri, mri_tests, the concurrency tests and the fuzz corpus replay, then ctest over them.
#  2. ThreadSanitizer: libmri and the concurrency tests (16 threads calling the operators and
#     reconstruct) with OMP_NUM_THREADS=1. Why 1: GCC's libgomp is not built with TSan, so its
#     barriers are invisible to it and every OpenMP region would report false races; with a team
#     of one, libgomp starts no threads and what TSan checks is our code under 16 std::threads.
#     (The OpenMP parallel regions themselves are covered by ASan/UBSan above and by the
#     determinism tests.) FFTW is not instrumented either; it runs single-threaded here too.
# No CUDA (MRI_ENABLE_CUDA=OFF), no benchmarks, no examples, no Python package (an ASan libmri
# loaded into an uninstrumented python3 needs the runtime preloaded): only what is run.
# Builds in ./build-asan and ./build-tsan. Wall time on 2 cores: docs/reliability.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh"
jobs="$(nproc)"

# libmri's optimisation level ($3): under ASan+UBSan -O2, where the instrumented library compiles
# in about three quarters of -O3's time and its tests run no slower (at -O1 they ran 2.4x longer;
# docs/reliability.md, "CI time"). Under TSan -O1: it runs only the concurrency tests.
# The glue (the CLI, the tests, the fuzz harnesses) takes the project's default, -O1 (CMakeLists.txt).
# Without MPI (issue 16): Open MPI's own allocations at MPI_Init would be LeakSanitizer findings
# of a library not ours; the mpi test is then skipped.
configure() { # build dir, sanitizer flags, libmri's -O level
  cmake -S "$root" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="$2 -fno-omit-frame-pointer -g1" -DCMAKE_CXX_FLAGS_RELEASE="$3 -DNDEBUG" \
    -DMRI_ENABLE_CUDA=OFF -DMRI_ENABLE_MPI=OFF -DMRI_BUILD_BENCHMARKS=OFF -DMRI_BUILD_EXAMPLES=OFF \
    -DMRI_BUILD_PYTHON=OFF
}

# Tests run side by side, each with an OpenMP team: passive waiting (scripts/test.sh says why).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

start=$SECONDS
configure "$root/build-asan" "-fsanitize=address,undefined -fno-sanitize-recover=all" -O2
cmake --build "$root/build-asan" -j "$jobs" --target mri mri_tests plugin_lazy_load mri_concurrency_tests mri_fuzz_replay
(cd "$root/build-asan" &&
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j "$jobs" -E '^(consumer|gpu)$')
echo "sanitize: ASan+UBSan build and tests: $((SECONDS - start)) s"

start=$SECONDS
configure "$root/build-tsan" "-fsanitize=thread" -O1
cmake --build "$root/build-tsan" -j "$jobs" --target mri mri_concurrency_tests
(cd "$root/build-tsan" &&
  OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --output-on-failure -R '^concurrency$')
echo "sanitize: TSan build and concurrency tests: $((SECONDS - start)) s"
