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


# CUDA arrays (mri/_cuda.py): read and written in place on the device, no host copy.

def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


class _PointerSpy:
    """Wraps a holder's device entry point and records the pointers it receives."""

    def __init__(self, holder, name):
        self.calls, self._call = [], getattr(holder, name)

    def __call__(self, source, result):
        self.calls.append((source, result))
        self._call(source, result)


class _OpWithSpies:
    """The holder's methods with spies: pybind11 objects take no new attributes, so the Python
    operator's _op is swapped for this proxy."""

    def __init__(self, holder):
        self._holder = holder
        self.forward_device = _PointerSpy(holder, "forward_device")
        self.adjoint_device = _PointerSpy(holder, "adjoint_device")

    def __getattr__(self, name):
        return getattr(self._holder, name)


def test_nufft_on_torch_cuda_tensors_in_place(rng):
    torch = _torch_cuda()
    points = mri.traj.radial((64, 48), 64, 96)
    op = mri.NufftOperator(points, (64, 48), tolerance=1e-4, backend="cuda")
    assert op.takes_cuda_arrays
    x = random_image(rng, (64, 48))
    y_host = op.forward(x)
    spy = op._op = _OpWithSpies(op._op)
    # A Fortran-ordered complex64 tensor is read where it lies: the pointer passed is its own.
    xt = torch.from_numpy(x.T.copy()).cuda().T  # (64, 48) with strides (1, 64): Fortran order
    y = op.forward(xt)
    assert spy.forward_device.calls[-1] == (xt.data_ptr(), y.data_ptr())
    assert isinstance(y, torch.Tensor) and y.is_cuda and y.dtype == torch.complex64 and y.shape == (points.shape[0],)
    # The same plan and kernels as the host path (deterministic): the same bits.
    np.testing.assert_array_equal(y.cpu().numpy(), y_host)
    # A C-ordered complex128 tensor is converted once on the device, then read.
    np.testing.assert_array_equal(op.forward(torch.from_numpy(x.astype(np.complex128)).cuda()).cpu().numpy(), y_host)
    samples = random_image(rng, (points.shape[0],))
    back = op.adjoint(torch.from_numpy(samples).cuda())
    assert back.is_cuda and back.shape == (64, 48)
    np.testing.assert_array_equal(back.cpu().numpy(), op._op._holder.adjoint(samples))


def test_exact_operator_and_cupy_arrays_on_the_device(rng):
    cupy = pytest.importorskip("cupy")
    points = rng.uniform(-8, 8, (400, 2)).astype(np.float32)
    op = mri.ExactOperator(points, (16, 16), backend="cuda", policy="gather")
    x = random_image(rng, (16, 16))
    y = op.forward(cupy.asarray(x))
    assert isinstance(y, cupy.ndarray) and y.dtype == np.complex64
    np.testing.assert_array_equal(cupy.asnumpy(y), op.forward(x))
    samples = random_image(rng, (400,))
    np.testing.assert_array_equal(cupy.asnumpy(op.adjoint(cupy.asarray(samples))), op.adjoint(samples))


def test_dlpack_only_arrays_are_taken(rng):
    torch = _torch_cuda()

    class DlpackOnly:  # exposes DLPack, not __cuda_array_interface__
        def __init__(self, tensor):
            self._t = tensor

        def __dlpack__(self, **kwargs):
            return self._t.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._t.__dlpack_device__()

    points = mri.traj.radial((32, 32), 32, 64)
    op = mri.NufftOperator(points, (32, 32), backend="cuda")
    x = random_image(rng, (32, 32))
    y = op.forward(DlpackOnly(torch.from_numpy(x).cuda()))
    assert mri._cuda.is_cuda_array(y)
    host = y.get() if hasattr(y, "get") else y.cpu().numpy()
    np.testing.assert_array_equal(host, op.forward(x))


def test_cuda_arrays_bad_input_names_the_argument(rng):
    torch = _torch_cuda()
    points = mri.traj.radial((32, 32), 32, 64)
    x = torch.from_numpy(random_image(rng, (32, 32))).cuda()
    with pytest.raises(ValueError, match=r"^x: a CUDA array, but this NufftOperator runs on the cpu backend"):
        mri.NufftOperator(points, (32, 32), backend="cpu").forward(x)
    gpu = mri.NufftOperator(points, (32, 32), backend="cuda")
    with pytest.raises(ValueError, match=r"^x: shape \(32, 31\)"):
        gpu.forward(x[:, :31])
    with pytest.raises(TypeError, match=r"^x: dtype torch.bool"):
        gpu.forward(torch.zeros((32, 32), dtype=torch.bool, device="cuda"))
    maps = np.ones((32, 32, 2), dtype=np.complex64)
    with pytest.raises(TypeError, match=r"^x: a CUDA array; SenseOperator takes host arrays"):
        mri.SenseOperator(points, (32, 32), maps, backend="cuda").forward(x)
    host = np.zeros(points.shape[0], dtype=np.complex64)
    with pytest.raises(ValueError, match=r"samples.*host memory"):
        gpu._op.forward_device(x.data_ptr(), host.ctypes.data)


def test_torch_linear_op_stays_on_the_device(rng):
    torch = _torch_cuda()
    import mri.torch

    points = mri.traj.radial((32, 32), 32, 64)
    op = mri.NufftOperator(points, (32, 32), backend="cuda")
    module = mri.torch.LinearOp(op)
    x = torch.from_numpy(random_image(rng, (2, 32, 32))).cuda().requires_grad_()
    spy = op._op = _OpWithSpies(op._op)
    y = module(x)
    assert y.is_cuda and y.shape == (2, points.shape[0])
    g = torch.from_numpy(random_image(rng, (2, points.shape[0]))).cuda()
    y.backward(g)
    assert len(spy.forward_device.calls) == 2 and len(spy.adjoint_device.calls) == 2  # each batch item on the device
    for b in range(2):
        np.testing.assert_array_equal(x.grad[b].cpu().numpy(), op._op._holder.adjoint(g[b].cpu().numpy()))
