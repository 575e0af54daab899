#!/usr/bin/env bash
# The Python package's GPU cases (tests/python, marker gpu) on the device, whose python3 (with
# PyTorch, CuPy, NumPy, pybind11 and pytest) is not the Debian python3 the package is built for
# here: the extension is compiled there against the staged libmri (.devstage/new/lib, beside its
# libmri_cuda.so) and the pure-Python modules of this tree, then pytest runs the gpu cases and
# test_torch.py (the float64 gradcheck under that PyTorch).
#
#   run(command="tools/dev/python-gpu-device.sh", carry=[".devstage"])
#
# $OUT gets python_gpu.log (the compile's errors, if any, then pytest's output). SRC: the source
# tree to take python/, include/ and tests/python from (default: this one).
set -u
S=$PWD/.devstage
cd "${SRC:-.}"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
B=/tmp/mri-python
mkdir -p "$B/mri"
cp python/mri/*.py "$B/mri/"
version=$(sed -n 's/^project(mri VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
suffix=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
flags="-O2 -std=c++20 -fPIC -fvisibility=hidden $(python3 -m pybind11 --includes) -Iinclude -Ipython/src"
{
  for f in module errors arrays operators recon dynamic; do
    g++ $flags -DMRI_PYTHON_VERSION="\"$version\"" -c "python/src/$f.cpp" -o "$B/$f.o" &
  done
  wait
  g++ -shared "$B"/*.o -L"$S/new/lib" -l:libmri.so.0 -Wl,-rpath,"$S/new/lib" -o "$B/mri/_mri$suffix"
  export LD_LIBRARY_PATH=$S/new/lib:$S/runtime-libs:/usr/local/cuda/lib64
  python3 -c 'import torch, cupy; print("torch", torch.__version__, torch.cuda.is_available(), "cupy", cupy.__version__)'
  PYTHONPATH=$B PYTHONDONTWRITEBYTECODE=1 python3 python/bench/cuda_arrays.py 2
  PYTHONPATH=$B PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider tests/python/test_gpu.py \
    tests/python/test_torch.py
  echo "pytest rc=$?"
} >"$OUT/python_gpu.log" 2>&1
tail -25 "$OUT/python_gpu.log"
