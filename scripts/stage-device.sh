#!/usr/bin/env bash
# Copies what the device machine runs (libmri, test, benchmark and example binaries, the `mri`
# tool (cli/mri, for scripts/bench-multislice.sh), and the
# shared libraries it lacks) from a build made here into .devstage/, under the build tree's
# layout, so the device call carries a few MB instead of the whole build folder:
#   scripts/stage-device.sh [build-dir]   then   run(..., carry=[".devstage"]) with BUILD_DIR=.devstage
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-gpu}"
rm -rf .devstage
mkdir -p .devstage/lib .devstage/tests .devstage/benchmarks .devstage/examples .devstage/runtime-libs .devstage/cli
cp -L "$build"/lib/libmri.so.0 "$build"/lib/libmri_cuda.so .devstage/lib/ # libmri and its CUDA plugin, side by side
cp -L "$build"/lib/libmri_io.so.0 .devstage/lib/                           # ISMRMRD / NIfTI I/O
cp "$build"/tests/libmri_fake_cuda_plugin.so .devstage/lib/                  # [plugin] tests: MRI_TEST_PLUGIN_DIR
cp "$build"/tests/mri_gpu_tests "$build"/tests/mri_tests .devstage/tests/
cp "$build"/cli/mri .devstage/cli/
find "$build/benchmarks" -maxdepth 1 -type f -name 'bench_*' -perm -u+x -exec cp {} .devstage/benchmarks/ \;
find "$build/examples" -maxdepth 1 -type f -perm -u+x -exec cp {} .devstage/examples/ \;
cp -L /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian .devstage/runtime-libs/ # not on the device
# libmri_io's Debian libraries (libismrmrd, libnifti2, HDF5 and what HDF5 links: libcurl,
# Kerberos ...) and mri's (Open MPI where the build found it): the device's Ubuntu lacks some or has other versions; the C and C++ runtimes
# and OpenMP are the device's own.
ldd "$build"/lib/libmri_io.so.0 "$build"/cli/mri | awk '$3 ~ /^\// {print $3}' |
  grep -vE '/libmri|/libc\.so|/libm\.so|/libstdc\+\+|/libgcc_s|/ld-linux|/libgomp|/libdl|/libpthread|/librt' |
  xargs -r -I{} cp -L {} .devstage/runtime-libs/
du -sh .devstage
