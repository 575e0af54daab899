"""Build and packaging: the module imports from the build tree, its version is the C++ library's,
and the installed tree imports with Debian's python3 from a scratch prefix."""

import os
import pathlib
import re
import subprocess

import mri

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_version_is_the_cpp_librarys():
    project = re.search(r"project\(mri VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    assert mri.__version__ == project.group(1)


def test_the_extension_is_the_build_trees():
    build_python = pathlib.Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]).resolve()
    assert pathlib.Path(mri._mri.__file__).resolve().parent == build_python / "mri"


def test_installed_tree_imports(tmp_path):
    # `cmake --install` into a scratch prefix; Debian's python3 imports the package from the
    # prefix's lib/python3/dist-packages with LD_LIBRARY_PATH empty (the module's RPATH finds libmri).
    build = pathlib.Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]).resolve().parent
    subprocess.run(["cmake", "--install", str(build), "--prefix", str(tmp_path)], check=True,
                   stdout=subprocess.DEVNULL)
    site = tmp_path / "lib" / "python3" / "dist-packages"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "LD_LIBRARY_PATH": ""}
    script = ("import mri; mri.io._io()\n"
              "op = mri.NufftOperator(mri.traj.radial((32, 32), 8, 64), (32, 32), tolerance=1e-6, backend='cpu')\n"
              "z = op.adjoint(op.forward(mri.phantom((32, 32))))\n"
              "print(mri.__version__, mri.__file__)")
    out = subprocess.run(["/usr/bin/python3", "-c", script],
                         env=env, cwd=tmp_path, check=True, capture_output=True, text=True).stdout.split()
    assert out[0] == mri.__version__
    assert pathlib.Path(out[1]).is_relative_to(site)


def test_cuda_state_is_reported():
    assert isinstance(mri.cuda_available(), bool)
    if not mri.cuda_available():
        assert mri.cuda_unavailable_reason() != ""
