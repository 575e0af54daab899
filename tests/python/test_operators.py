"""The operators from NumPy against float64 references written here from the conventions
(MISSION.md: forward exp(-i 2 pi k.x / n), voxel coordinates -n/2 .. n/2-1, unnormalised sums),
adjointness, the Toeplitz normal and SENSE, and the error mapping."""

import numpy as np
import pytest

import mri
from conftest import random_image


def dft_matrix(points, shape):
    """The exact forward F (M x N) in float64, image index x fastest (Fortran order)."""
    axes = [np.arange(n) - n // 2 for n in shape]
    grids = np.meshgrid(*axes, indexing="ij")
    coords = np.stack([g.reshape(-1, order="F") for g in grids], axis=1)  # (N, d)
    phase = sum(np.outer(points[:, a].astype(np.float64), coords[:, a]) / shape[a] for a in range(len(shape)))
    return np.exp(-2j * np.pi * phase)


def flat(x):
    return np.asarray(x, dtype=np.complex128).reshape(-1, order="F")


def rel(a, b):
    return np.linalg.norm(flat(a) - flat(b)) / np.linalg.norm(flat(b))


MATRIX = (12, 10)


@pytest.fixture
def points(rng):
    return rng.uniform(-6, 5, (150, 2)).astype(np.float32)


def test_exact_float64_matches_the_conventions(points, rng):
    # Float64 sums with complex64 inputs and outputs: error at float32 rounding (~1e-7).
    x = random_image(rng, MATRIX)
    f = dft_matrix(points, MATRIX)
    op = mri.ExactOperator(points, MATRIX, precision="float64")
    assert rel(op.forward(x), f @ flat(x)) < 1e-6
    y = random_image(rng, (points.shape[0],))
    assert rel(op.adjoint(y), (f.conj().T @ flat(y)).reshape(MATRIX, order="F")) < 1e-6


def test_nufft_reaches_its_tolerance_against_the_exact_sums(points, rng):
    x = random_image(rng, MATRIX)
    f = dft_matrix(points, MATRIX)
    for tolerance in (1e-2, 1e-4):
        op = mri.NufftOperator(points, MATRIX, tolerance=tolerance)
        assert rel(op.forward(x), f @ flat(x)) < tolerance
    op = mri.NufftOperator(points, MATRIX, tolerance=1e-6, precision="float64")
    assert rel(op.forward(x), f @ flat(x)) < 1e-6


@pytest.mark.parametrize("make", [
    lambda p: mri.NufftOperator(p, MATRIX, tolerance=1e-3),
    lambda p: mri.ExactOperator(p, MATRIX),
])
def test_adjointness(make, points, rng):
    # <F x, y> = <x, F^H y> to float32 rounding of the sums (relative 1e-5 on these sizes).
    op = make(points)
    x, y = random_image(rng, op.ishape), random_image(rng, op.oshape)
    lhs = np.vdot(flat(y), flat(op.forward(x)))
    rhs = np.vdot(flat(op.adjoint(y)), flat(x))
    assert abs(lhs - rhs) / abs(lhs) < 1e-5
    assert op.shape == (points.shape[0], MATRIX[0] * MATRIX[1]) and op.dtype == np.complex64


def test_toeplitz_normal_equals_the_exact_normal(points, rng):
    weights = rng.uniform(0.5, 2, points.shape[0]).astype(np.float32)
    x = random_image(rng, MATRIX)
    f = dft_matrix(points, MATRIX)
    reference = f.conj().T @ (weights * (f @ flat(x)))
    exact = mri.ToeplitzNormal(points, MATRIX, weights=weights, precision="float64")
    assert rel(exact(x), reference.reshape(MATRIX, order="F")) < 1e-5
    nufft = mri.ToeplitzNormal(points, MATRIX, weights=weights, method="nufft", tolerance=1e-4)
    assert rel(nufft(x), reference.reshape(MATRIX, order="F")) < 1e-3


def test_sense_is_the_exact_operator_per_coil(points, rng):
    maps = random_image(rng, MATRIX + (3,))
    x = random_image(rng, MATRIX)
    sense = mri.SenseOperator(points, MATRIX, maps, precision="float64")
    f = dft_matrix(points, MATRIX)
    y = sense.forward(x)
    assert y.shape == (points.shape[0], 3)
    for c in range(3):
        assert rel(y[:, c], f @ (flat(maps[..., c]) * flat(x))) < 1e-6
    z = random_image(rng, y.shape)
    expected = sum(np.conj(flat(maps[..., c])) * (f.conj().T @ flat(z[:, c])) for c in range(3))
    assert rel(sense.adjoint(z), expected.reshape(MATRIX, order="F")) < 1e-6


def test_3d_operator_shapes(rng):
    points = mri.traj.koosh((8, 8, 6), 20, 16)
    assert points.shape == (320, 3)
    op = mri.NufftOperator(points, (8, 8, 6), tolerance=1e-4)
    x = random_image(rng, (8, 8, 6))
    f = dft_matrix(points, (8, 8, 6))
    assert rel(op.forward(x), f @ flat(x)) < 1e-4
    assert op.adjoint(op.forward(x)).shape == (8, 8, 6)


def test_invalid_argument_keeps_the_sdks_message():
    with pytest.raises(ValueError) as error:
        mri.NufftOperator(mri.traj.radial((16, 16), 4, 16), (16, 16), tolerance=0.5)
    assert type(error.value) is mri.InvalidArgument
    assert str(error.value) == "options.tolerance = 0.5: must be in [1e-06, 0.1]"


def test_bad_enum_names_list_the_accepted_ones():
    with pytest.raises(ValueError, match="gridding = 'fast': expected one of auto, scatter, gather, scatter-fixed"):
        mri.NufftOperator(mri.traj.radial((16, 16), 4, 16), (16, 16), gridding="fast")


def test_cuda_backend_without_a_device_is_unsupported():
    if mri.cuda_available():
        pytest.skip("a CUDA device is usable here")
    with pytest.raises(mri.Unsupported) as error:
        mri.NufftOperator(mri.traj.radial((16, 16), 4, 16), (16, 16), backend="cuda")
    assert isinstance(error.value, RuntimeError) and not isinstance(error.value, ValueError)


def test_operators_run_from_several_python_threads(rng):
    # The GIL is released during the SDK's work; each operator serialises its own calls.
    import concurrent.futures

    op = mri.NufftOperator(mri.traj.radial((32, 32), 16, 64), (32, 32))
    xs = [random_image(rng, (32, 32)) for _ in range(8)]
    serial = [op.forward(x) for x in xs]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(op.forward, xs))
    for a, b in zip(serial, threaded):
        np.testing.assert_array_equal(a, b)


def test_nan_values_are_refused_naming_the_first(rng):
    # The C++ value forms (mri::forward / mri::adjoint) check their input before the sums.
    op = mri.NufftOperator(mri.traj.radial((16, 16), 8, 32), (16, 16))
    x = random_image(rng, (16, 16))
    x[3, 0] = np.nan
    with pytest.raises(mri.InvalidArgument, match=r"^image\[3\] = \(nan,"):
        op.forward(x)
    y = random_image(rng, (256,))
    y[7] = np.inf
    with pytest.raises(ValueError, match=r"^samples\[7\]"):
        op.adjoint(y)


def test_nufft_adjoint_coils_is_the_adjoint_of_each_coil_bitwise(points, rng):
    op = mri.NufftOperator(points, MATRIX, tolerance=1e-4)
    y = random_image(rng, (points.shape[0], 5))
    images = op.adjoint_coils(y)
    assert images.shape == MATRIX + (5,)
    for c in range(5):
        np.testing.assert_array_equal(images[..., c], op.adjoint(y[:, c]))


def test_nufft_precision_follows_the_tolerance_by_default(points, rng):
    # The example: tolerance 1e-6 needs float64 (nufft_min_tolerance); None picks it.
    op = mri.NufftOperator(points, MATRIX, tolerance=1e-6, backend="cpu")
    assert op.precision == "float64"
    assert mri.NufftOperator(points, MATRIX, tolerance=1e-5).precision == "float32"
    x = random_image(rng, MATRIX)
    assert rel(op.forward(x), dft_matrix(points, MATRIX) @ flat(x)) < 1e-6
    with pytest.raises(mri.InvalidArgument):
        mri.NufftOperator(points, MATRIX, tolerance=1e-6, precision="float32")
