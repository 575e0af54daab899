"""pytest setup for the Python package's suite (ctest entries `python` and `python-gpu`).

The package is imported from the build tree (PYTHONPATH=<build>/python, set by ctest). Cases
marked gpu need a CUDA device; the python-gpu entry runs only those and, where every one was
skipped, exits with MRI_PYTEST_SKIPPED_EXIT (77: ctest's SKIP_RETURN_CODE, as the C++ GPU tests).
"""

import ctypes
import os
import zlib

import numpy as np
import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (ctest entry python-gpu)")


def pytest_sessionfinish(session, exitstatus):
    code = os.environ.get("MRI_PYTEST_SKIPPED_EXIT")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if not code or reporter is None or exitstatus != 0:
        return
    ran = len(reporter.stats.get("passed", [])) + len(reporter.stats.get("failed", []))
    if ran == 0:
        session.exitstatus = int(code)


@pytest.fixture
def rng(request):
    """A generator seeded per test (its name), so every test draws fresh, reproducible inputs."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def random_image(rng, shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def cli_env():
    """The environment for the mri tool run beside this process: its OpenMP team as large as ours.
    The exact float32 sums split by thread (docs/reliability.md, Determinism), and importing torch
    (test_torch.py, collected with the others) sets this process's team to torch's thread count."""
    threads = ctypes.CDLL("libgomp.so.1").omp_get_max_threads()
    return dict(os.environ, OMP_NUM_THREADS=str(threads))


def mri_tool():
    """The mri command-line tool of this build (MRI_TEST_CLI, set by ctest), or None when it is
    not set or not built (the comparisons with it are then skipped)."""
    path = os.environ.get("MRI_TEST_CLI")
    return path if path and os.path.exists(path) else None
