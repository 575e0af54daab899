"""mri.torch.LinearOp: autograd through the SDK's operators (backward = adjoint)."""

import numpy as np
import pytest

import mri

torch = pytest.importorskip("torch")
import mri.torch  # noqa: E402


def exact_op(matrix=(8, 8), samples=40, seed=0):
    points = np.random.default_rng(seed).uniform(-4, 4, (samples, 2)).astype(np.float32)
    return mri.ExactOperator(points, matrix, precision="float64")


def test_gradcheck_in_float64():
    # The acceptance case, at gradcheck's defaults (eps 1e-6, atol 1e-5, rtol 1e-3):
    # ExactOperator(precision="float64") takes and returns complex128 without rounding
    # (FourierOperator's cdouble forms), so central differences see only double rounding.
    op = mri.torch.LinearOp(exact_op())
    x = torch.randn(8, 8, dtype=torch.complex128, generator=torch.Generator().manual_seed(1), requires_grad=True)
    assert torch.autograd.gradcheck(op, (x,))
    y = torch.randn(40, dtype=torch.complex128, generator=torch.Generator().manual_seed(2), requires_grad=True)
    assert torch.autograd.gradcheck(op.adjoint, (y,))


def test_float64_exact_operator_keeps_double_precision(rng):
    # Against the dense float64 matrix of the same (float32) points: double rounding only.
    points = rng.uniform(-4, 4, (30, 2)).astype(np.float32)
    op = mri.ExactOperator(points, (6, 8), precision="float64")
    c = np.arange(-3, 3)[:, None], np.arange(-4, 4)[None, :]
    phase = np.multiply.outer(points[:, 0].astype(np.float64), c[0] / 6.0) + \
        np.multiply.outer(points[:, 1].astype(np.float64), c[1] / 8.0)
    dense = np.exp(-2j * np.pi * phase).reshape(30, -1)  # (M, 6 * 8), image index x * 8 + y
    x = rng.standard_normal((6, 8)) + 1j * rng.standard_normal((6, 8))
    y = op.forward(x)
    assert y.dtype == np.complex128
    assert np.abs(y - dense @ x.reshape(-1)).max() < 1e-12 * np.abs(y).max()
    z = rng.standard_normal(30) + 1j * rng.standard_normal(30)
    back = op.adjoint(z)
    assert back.dtype == np.complex128 and back.shape == (6, 8)
    assert np.abs(back.reshape(-1) - dense.conj().T @ z).max() < 1e-12 * np.abs(back).max()
    assert op.forward(x.astype(np.complex64)).dtype == np.complex64  # complex64 stays complex64
    with pytest.raises(ValueError, match=r"^x: holds NaN"):
        op.forward(np.full((6, 8), np.nan, dtype=np.complex128))
    with pytest.raises(ValueError, match=r"^y: shape \(29,\)"):
        op.adjoint(np.zeros(29, dtype=np.complex128))


def test_gradcheck_of_a_complex64_operator_needs_a_large_eps():
    # The NUFFT computes in complex64: a float64 input is rounded at the boundary, so central
    # differences with eps = 1e-6 would see that rounding (about 5e-7 on outputs of magnitude 8,
    # i.e. 0.25 after dividing by 2 eps). The operator is linear, so eps = 1e-2 has no truncation
    # error and leaves the rounding at 5e-5, below the default rtol of 1e-3 on entries of about 1.
    points = mri.traj.radial((8, 8), 8, 16)
    op = mri.torch.LinearOp(mri.NufftOperator(points, (8, 8), tolerance=1e-5))
    x = torch.randn(8, 8, dtype=torch.complex128, generator=torch.Generator().manual_seed(3), requires_grad=True)
    assert torch.autograd.gradcheck(op, (x,), eps=1e-2)


def test_backward_is_the_adjoint():
    op = exact_op()
    module = mri.torch.LinearOp(op)
    x = torch.randn(8, 8, dtype=torch.complex64, requires_grad=True)
    g = torch.randn(40, dtype=torch.complex64)
    module(x).backward(g)
    np.testing.assert_array_equal(x.grad.numpy(), op.adjoint(g.numpy()))


def test_batched_leading_dimension_and_dtypes():
    op = exact_op()
    module = mri.torch.LinearOp(op)
    x = torch.randn(3, 8, 8, dtype=torch.complex128)
    y = module(x)
    assert y.shape == (3, 40) and y.dtype == torch.complex128
    for b in range(3):
        np.testing.assert_array_equal(y[b].numpy(), op.forward(x[b].numpy()).astype(np.complex128))
    real = torch.randn(8, 8, dtype=torch.float32, requires_grad=True)
    out = module(real)
    assert out.dtype == torch.complex64
    out.abs().sum().backward()
    assert real.grad.dtype == torch.float32 and real.grad.shape == (8, 8)
    with pytest.raises(ValueError, match=r"^x: shape \(8, 7\)"):
        module(torch.zeros(8, 7, dtype=torch.complex64))


def test_normal_of_a_nufft_through_autograd():
    points = mri.traj.radial((16, 16), 16, 32)
    module = mri.torch.LinearOp(mri.NufftOperator(points, (16, 16)))
    x = torch.randn(16, 16, dtype=torch.complex64, requires_grad=True)
    loss = module.normal(x).abs().pow(2).sum()
    loss.backward()
    # d/dx* of ||A^H A x||^2 = (A^H A)^2 x (A^H A Hermitian); PyTorch's gradient convention is
    # twice that derivative for real losses of complex inputs.
    n = module.normal
    expected = 2 * n(n(x.detach()))
    assert torch.linalg.norm(x.grad - expected) / torch.linalg.norm(expected) < 1e-5
    assert module.H(module(x)).shape == (16, 16)


def test_sense_and_toeplitz_operators_through_autograd(rng):
    points = rng.uniform(-6, 5, (120, 2)).astype(np.float32)
    maps = (rng.standard_normal((10, 8, 3)) + 1j * rng.standard_normal((10, 8, 3))).astype(np.complex64)
    sense = mri.torch.LinearOp(mri.SenseOperator(points, (10, 8), maps))
    x = torch.randn(10, 8, dtype=torch.complex64, requires_grad=True)
    y = sense(x)
    assert y.shape == (120, 3)
    g = torch.randn(120, 3, dtype=torch.complex64)
    y.backward(g)
    np.testing.assert_array_equal(x.grad.numpy(), sense.op.adjoint(g.numpy()))
    # The Toeplitz normal is self-adjoint: its backward is itself.
    normal = mri.torch.LinearOp(mri.ToeplitzNormal(points, (10, 8)))
    x.grad = None
    h = torch.randn(10, 8, dtype=torch.complex64)
    normal(x).backward(h)
    np.testing.assert_array_equal(x.grad.numpy(), normal.op.forward(h.numpy()))
