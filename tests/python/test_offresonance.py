"""Off-resonance (mri/offresonance.hpp) from Python: the exact field-corrected operator against a
float64 reference written from the model, the time-segmented one within its stated error, and
mri.reconstruct with a field map."""

import numpy as np
import pytest

import mri
from conftest import random_image
from test_operators import flat, rel

MATRIX = (12, 10)


def field_matrix(points, shape, field, times):
    """(M x N) float64: exp(-2 pi i (k_m . x / n + f(x) t_m)), image index x fastest."""
    axes = [np.arange(n) - n // 2 for n in shape]
    grids = np.meshgrid(*axes, indexing="ij")
    coords = np.stack([g.reshape(-1, order="F") for g in grids], axis=1)
    phase = sum(np.outer(points[:, a].astype(np.float64), coords[:, a]) / shape[a] for a in range(len(shape)))
    phase += np.outer(times.astype(np.float64), flat(field).real)
    return np.exp(-2j * np.pi * phase)


@pytest.fixture
def problem(rng):
    points = rng.uniform(-6, 5, (160, 2)).astype(np.float32)
    field = rng.uniform(-60, 90, MATRIX).astype(np.float32)  # Hz
    times = np.sort(rng.uniform(0, 8e-3, 160)).astype(np.float32)  # s from the echo
    return points, field, times


def test_exact_field_operator_matches_the_model_in_float64(problem, rng):
    points, field, times = problem
    a = field_matrix(points, MATRIX, field, times)
    op = mri.FieldFourierOperator(points, MATRIX, field, times, precision="float64")
    x = random_image(rng, MATRIX)
    assert rel(op.forward(x), a @ flat(x)) < 1e-6
    y = random_image(rng, (160,))
    assert rel(op.adjoint(y), (a.conj().T @ flat(y)).reshape(MATRIX, order="F")) < 1e-6


def test_a_zero_field_is_the_exact_operator_bitwise(problem, rng):
    points, _, times = problem
    zero = np.zeros(MATRIX, dtype=np.float32)
    x = random_image(rng, MATRIX)
    np.testing.assert_array_equal(mri.FieldFourierOperator(points, MATRIX, zero, times).forward(x),
                                  mri.ExactOperator(points, MATRIX).forward(x))


def test_segmented_operator_is_within_its_stated_error(problem, rng):
    points, field, times = problem
    exact = mri.FieldFourierOperator(points, MATRIX, field, times, precision="float64")
    segmented = mri.SegmentedFieldOperator(points, MATRIX, field, times, segment_tolerance=1e-3, tolerance=1e-5,
                                           precision="float64")
    assert segmented.segments >= 2 and segmented.segment_error <= 1e-3
    x = random_image(rng, MATRIX)
    # The stated bound is the expected relative error per sample for images of independent
    # phases (mri/offresonance.hpp); the NUFFT adds up to its 1e-5.
    assert rel(segmented.forward(x), exact.forward(x)) < 2 * segmented.segment_error + 1e-5


def test_reconstruct_with_a_field_map():
    matrix = (32, 32)
    points = mri.traj.spiral(matrix, 4, 1024)
    truth = mri.phantom(matrix)
    field = np.fromfunction(lambda x, y: 120.0 * np.exp(-((x - 16) ** 2 + (y - 12) ** 2) / 60), matrix)
    times = np.tile(np.linspace(0, 12e-3, 1024), 4).astype(np.float32)
    kspace = mri.FieldFourierOperator(points, matrix, field, times, precision="float64").forward(truth)
    weights = mri.density.spiral(points, matrix, 4)
    plain, report = mri.reconstruct(points, kspace, matrix, weights=weights, iterations=15, backend="cpu")
    assert report["offresonance"] == "none"
    corrected, report = mri.reconstruct(points, kspace, matrix, weights=weights, iterations=15, backend="cpu",
                                        field_map=field, times=times)
    assert report["offresonance"] == "time-segmented" and report["segments"] >= 2
    assert mri.psnr(corrected, truth) > mri.psnr(plain, truth) + 3
    with pytest.raises(mri.InvalidArgument):
        mri.reconstruct(points, kspace, matrix, backend="cpu", field_map=field)  # no sample times
