"""The CUDA backend from NumPy (ctest entry python-gpu, labels python and gpu): skipped where no
CUDA device is usable, as the C++ GPU tests."""

import numpy as np
import pytest

import mri
from conftest import random_image
from test_operators import rel

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not mri.cuda_available(), reason="no usable CUDA device")]


def test_nufft_on_the_device_matches_the_cpu(rng):
    # Both reach the tolerance against the exact sums; they differ by at most about twice it.
    points = mri.traj.radial((64, 64), 64, 128)
    cpu = mri.NufftOperator(points, (64, 64), tolerance=1e-4, backend="cpu")
    gpu = mri.NufftOperator(points, (64, 64), tolerance=1e-4, backend="cuda")
    assert gpu.backend == "cuda"
    x = random_image(rng, (64, 64))
    assert rel(gpu.forward(x), cpu.forward(x)) < 2e-4
    y = random_image(rng, (points.shape[0],))
    assert rel(gpu.adjoint(y), cpu.adjoint(y)) < 2e-4


def test_reconstruct_on_the_device_matches_the_cpu():
    matrix = (64, 64)
    points = mri.traj.radial(matrix, 64, 128)
    kspace = mri.phantom_kspace(points, matrix)
    cpu, _ = mri.reconstruct(points, kspace, matrix, iterations=10, lam=1.0, backend="cpu", method="nufft")
    gpu, report = mri.reconstruct(points, kspace, matrix, iterations=10, lam=1.0, backend="cuda", method="nufft")
    assert report["backend"] == "cuda"
    # CG in float32 on both: 10 iterations leave differences of the order of the NUFFT tolerance.
    assert rel(gpu, cpu) < 1e-2


def test_exact_operator_on_the_device_matches_float64(rng):
    points = rng.uniform(-8, 8, (500, 2)).astype(np.float32)
    ref = mri.ExactOperator(points, (16, 16), precision="float64", backend="cpu")
    gpu = mri.ExactOperator(points, (16, 16), backend="cuda")
    x = random_image(rng, (16, 16))
    assert rel(gpu.forward(x), ref.forward(x)) < 1e-4
