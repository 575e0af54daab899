"""mri.mrinufft.MRIFourierOperator: MRI-NUFFT's documented conventions on our backend."""

import numpy as np
import pytest

import mri
import mri.mrinufft
from test_operators import dft_matrix, flat, rel

SHAPE = (16, 12)


@pytest.fixture
def samples(rng):
    return rng.uniform(-0.5, 0.5, (200, 2)).astype(np.float32)  # MRI-NUFFT's [-0.5, 0.5)


def c_image(rng, shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def test_op_is_the_unnormalised_type_2_transform_of_normalised_samples(samples, rng):
    # y_m = sum_n x_n exp(-i 2 pi s_m . n), n in {-N/2 .. N/2-1}: cycles/FOV are s * N.
    nufft = mri.mrinufft.MRIFourierOperator(samples, SHAPE, method="exact", precision="float64")
    x = c_image(rng, SHAPE)  # MRI-NUFFT's C-ordered image, indexed image[x, y]
    f = dft_matrix(samples * np.asarray(SHAPE, dtype=np.float32), SHAPE)
    y = nufft.op(x)
    assert y.shape == (200,)  # squeeze_dims: one coil
    assert rel(y, f @ flat(x)) < 1e-6
    z = c_image(rng, (200,))
    assert rel(nufft.adj_op(z), (f.conj().T @ z.astype(np.complex128)).reshape(SHAPE, order="F")) < 1e-6


def test_radians_are_normalised_as_mri_nufft_does(samples, rng):
    x = c_image(rng, SHAPE)
    unit = mri.mrinufft.MRIFourierOperator(samples, SHAPE)
    radians = mri.mrinufft.MRIFourierOperator(samples * 2 * np.pi, SHAPE)
    assert rel(radians.op(x), unit.op(x)) < 1e-6


def test_density_weights_the_adjoint(samples, rng):
    density = rng.uniform(0.1, 1, 200).astype(np.float32)
    plain = mri.mrinufft.MRIFourierOperator(samples, SHAPE)
    weighted = mri.mrinufft.MRIFourierOperator(samples, SHAPE, density=density)
    y = c_image(rng, (200,))
    np.testing.assert_array_equal(weighted.adj_op(y), plain.adj_op(y * density))
    estimated = mri.mrinufft.MRIFourierOperator(samples, SHAPE, density=True)
    assert estimated.density.shape == (200,) and np.all(estimated.density > 0)


def test_smaps_multi_coil_and_data_consistency(samples, rng):
    smaps = c_image(rng, (3,) + SHAPE)
    sense = mri.mrinufft.MRIFourierOperator(samples, SHAPE, n_coils=3, smaps=smaps)
    coils = mri.mrinufft.MRIFourierOperator(samples, SHAPE, n_coils=3)
    x = c_image(rng, SHAPE)
    y = sense.op(x)
    assert y.shape == (3, 200)
    np.testing.assert_array_equal(y, coils.op(smaps * x))
    images = coils.adj_op(y)
    assert images.shape == (3,) + SHAPE
    combined = sense.adj_op(y)
    assert combined.shape == SHAPE
    assert rel(combined, np.sum(np.conj(smaps) * images, axis=0)) < 1e-6
    obs = c_image(rng, (3, 200))
    assert rel(sense.data_consistency(x, obs), sense.adj_op(sense.op(x) - obs)) < 1e-6


def test_get_operator_and_bad_samples():
    assert mri.mrinufft.get_operator("mri") is mri.mrinufft.MRIFourierOperator
    with pytest.raises(ValueError, match="^samples: 3 coordinates for a 2-D shape"):
        mri.mrinufft.MRIFourierOperator(np.zeros((4, 3), dtype=np.float32), SHAPE)


def test_lipschitz_constant_is_the_largest_eigenvalue_of_the_normal(samples):
    nufft = mri.mrinufft.MRIFourierOperator(samples, SHAPE, method="exact", precision="float64")
    f = dft_matrix(samples * np.asarray(SHAPE, dtype=np.float32), SHAPE)
    largest = np.linalg.eigvalsh(f.conj().T @ f)[-1]
    # Power iteration approaches it from below: 6.7e-3 off after 10 iterations, 2.7e-6 after 50 here.
    assert abs(nufft.get_lipschitz_cst(max_iter=50) - largest) / largest < 1e-4
