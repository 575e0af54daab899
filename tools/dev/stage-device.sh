#!/usr/bin/env bash
# Copies what the device machine runs (libmri, test, benchmark and example binaries, the `mri`
# tool (cli/mri, for tools/dev/bench-multislice.sh), and the
# shared libraries it lacks) from a build made here into .devstage/, under the build tree's
# layout, so the device call carries a few MB instead of the whole build folder:
#   tools/dev/stage-device.sh [build-dir]   then   run(..., carry=[".devstage"]) with BUILD_DIR=.devstage
#   tools/dev/stage-device.sh build-dir front   bench_nufft_front_gpu alone, with libmri, its plugin and
#                                             cuFINUFFT (a build configured with -DMRI_CUFINUFFT_DIR):
#                                             the whole stage plus cuFINUFFT's 15 MB would pass the
#                                             64 MiB a device call carries (tools/dev/nufft-front.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build-gpu}"
what="${2:-all}"

# The shared libraries of FILES that the device lacks or has in other versions (Debian's
# libismrmrd, libnifti2, HDF5 and what HDF5 links: libcurl, Kerberos ...; Open MPI where the build
# found it; FFTW) into runtime-libs/. The C and C++ runtimes, OpenMP and the CUDA toolkit's
# libraries are the device's own.
copy_host_libraries() {
  ldd "$@" | awk '$3 ~ /^\// {print $3}' |
    grep -vE '/libmri|/libcufinufft|/libc\.so|/libm\.so|/libstdc\+\+|/libgcc_s|/ld-linux|/libgomp|/libdl|/libpthread|/librt|/cuda' |
    sort -u | xargs -r -I{} cp -L {} .devstage/runtime-libs/
}

rm -rf .devstage
if [ "$what" = front ]; then
  cufinufft_dir=$(sed -n 's/^MRI_CUFINUFFT_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")
  mkdir -p .devstage/lib .devstage/benchmarks .devstage/runtime-libs
  cp -L "$build"/lib/libmri.so.0 "$build"/lib/libmri_cuda.so "$cufinufft_dir"/libcufinufft.so .devstage/lib/
  cp "$build"/benchmarks/bench_nufft_front_gpu .devstage/benchmarks/
  copy_host_libraries "$build"/lib/libmri.so.0 "$build"/benchmarks/bench_nufft_front_gpu
  du -sh .devstage
  exit 0
fi
mkdir -p .devstage/lib .devstage/tests .devstage/benchmarks .devstage/examples .devstage/runtime-libs .devstage/cli
cp -L "$build"/lib/libmri.so.0 "$build"/lib/libmri_cuda.so .devstage/lib/ # libmri and its CUDA plugin, side by side
cp -L "$build"/lib/libmri_io.so.0 .devstage/lib/                           # ISMRMRD / NIfTI I/O
cp "$build"/tests/libmri_fake_cuda_plugin.so .devstage/lib/                  # [plugin] tests: MRI_TEST_PLUGIN_DIR
cp "$build"/tests/mri_gpu_tests "$build"/tests/mri_tests .devstage/tests/
cp "$build"/cli/mri .devstage/cli/
find "$build/benchmarks" -maxdepth 1 -type f -name 'bench_*' -perm -u+x -exec cp {} .devstage/benchmarks/ \;
find "$build/examples" -maxdepth 1 -type f -perm -u+x -exec cp {} .devstage/examples/ \;
cp -L /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian .devstage/runtime-libs/ # not on the device
copy_host_libraries "$build"/lib/libmri_io.so.0 "$build"/cli/mri # libmri_io's and the tool's
du -sh .devstage
