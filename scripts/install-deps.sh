#!/usr/bin/env bash
# Installs the Debian packages mri builds and tests with. Idempotent: installs only what is
# missing. OpenMPI builds `mri recon` over MPI ranks and lets the `mpi` test entry run.
# The CUDA toolkit (nvcc 13) is not a Debian package: it is used when present. Python 3, pybind11,
# NumPy and pytest build and test the Python package mri (python/, docs/python.md); python3-torch
# its mri.torch module (these five added 633 MB to a Debian 12 machine that had the others).
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libeigen3-dev libfftw3-dev libpng-dev
          catch2 libbenchmark-dev libcli11-dev bart
          libismrmrd-dev ismrmrd-tools libnifti2-dev zlib1g-dev nlohmann-json3-dev
          libopenmpi-dev openmpi-bin
          python3-dev pybind11-dev python3-numpy python3-pytest python3-torch)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
