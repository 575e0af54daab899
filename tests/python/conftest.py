"""pytest setup for the Python package's suite (ctest entries `python` and `python-gpu`).

The package is imported from the build tree (PYTHONPATH=<build>/python, set by ctest). Cases
marked gpu need a CUDA device; the python-gpu entry runs only those and, where every one was
skipped, exits with MRI_PYTEST_SKIPPED_EXIT (77: ctest's SKIP_RETURN_CODE, as the C++ GPU tests).
"""

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
