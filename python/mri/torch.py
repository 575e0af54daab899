"""mri.torch: the SDK's operators as differentiable PyTorch modules (docs/python.md, "PyTorch").

LinearOp(op) wraps any mri operator (NufftOperator, ExactOperator, SenseOperator,
ToeplitzNormal, or anything with forward/adjoint/ishape/oshape). Its forward is op.forward and its
backward op.adjoint (the vector-Jacobian product of a complex-linear map A is A^H g); the
adjoint's backward is op.forward. Tensors of op.ishape, or with one leading batch dimension
(each item in turn). Complex tensors come back in their own dtype (complex64 or complex128; a
real input gives the matching complex dtype) and on their own device.

Where the tensors live: a CUDA tensor given to an operator that computes on CUDA arrays
(NufftOperator and ExactOperator made with backend="cuda": op.takes_cuda_arrays) stays on the
device, read and written in place (mri/_cuda.py; no host copy). Any other tensor is copied to a
host NumPy array and the result back (so SenseOperator, the Toeplitz normal and CPU operators
take CUDA tensors too, through the host).

Precision: ExactOperator(precision="float64") computes complex128 tensors in double end to end,
so a float64 gradcheck passes at its default eps. The other operators compute in complex64 (the
SDK's storage type): complex128 tensors are rounded at that boundary, and a float64 gradcheck
of them needs eps = 1e-2 (the map is linear: a large eps has no truncation error; docs/python.md).
"""

import numpy as np
import torch

__all__ = ["LinearOp"]

_COMPLEX_OF = {torch.float32: torch.complex64, torch.float64: torch.complex128,
               torch.complex64: torch.complex64, torch.complex128: torch.complex128}


def _apply(op_call, x, in_shape, on_device):
    """op_call (an operator's forward or adjoint) on x of in_shape or (batch, *in_shape), as a
    tensor like x: on the device when on_device and x is a CUDA tensor, else through NumPy."""
    if x.dtype not in _COMPLEX_OF:
        raise TypeError(f"x: dtype {x.dtype}; expected a complex or real floating tensor")
    dtype = _COMPLEX_OF[x.dtype]
    if tuple(x.shape) == tuple(in_shape):
        batched = False
    elif x.dim() == len(in_shape) + 1 and tuple(x.shape[1:]) == tuple(in_shape):
        batched = True
    else:
        raise ValueError(f"x: shape {tuple(x.shape)}, expected {tuple(in_shape)} or (batch, *{tuple(in_shape)})")
    x = x.detach()
    if x.is_cuda and on_device:
        run = op_call
    else:
        def run(item):
            host = item.resolve_conj().cpu().numpy()
            return torch.from_numpy(np.ascontiguousarray(op_call(host)))
    out = torch.stack([run(item) for item in x]) if batched else run(x)
    return out.to(device=x.device, dtype=dtype)


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, forward, adjoint, in_shape, out_shape, on_device):
        ctx.adjoint, ctx.out_shape, ctx.real_input, ctx.on_device = adjoint, out_shape, not x.is_complex(), on_device
        return _apply(forward, x, in_shape, on_device)

    @staticmethod
    def backward(ctx, grad):
        g = _apply(ctx.adjoint, grad, ctx.out_shape, ctx.on_device)
        if ctx.real_input:  # d/dx of a real input: the real part of A^H g
            g = g.real
        return g, None, None, None, None, None


class LinearOp(torch.nn.Module):
    """An mri operator as an autograd-aware module: forward(x) = A x, adjoint(y) = A^H y,
    normal(x) = A^H A x; gradients flow through each by the other."""

    def __init__(self, op):
        super().__init__()
        self.op = op
        self.ishape = tuple(op.ishape)
        self.oshape = tuple(op.oshape)

    def forward(self, x):
        return _Linear.apply(x, self.op.forward, self.op.adjoint, self.ishape, self.oshape, self._on_device)

    def adjoint(self, y):
        return _Linear.apply(y, self.op.adjoint, self.op.forward, self.oshape, self.ishape, self._on_device)

    @property
    def _on_device(self):
        return bool(getattr(self.op, "takes_cuda_arrays", False))

    def normal(self, x):
        return self.adjoint(self.forward(x))

    @property
    def H(self):
        """The adjoint as a LinearOp."""
        return LinearOp(_Adjoint(self.op))


class _Adjoint:
    def __init__(self, op):
        self._op = op
        self.ishape, self.oshape = tuple(op.oshape), tuple(op.ishape)
        self.takes_cuda_arrays = bool(getattr(op, "takes_cuda_arrays", False))

    def forward(self, y):
        return self._op.adjoint(y)

    def adjoint(self, x):
        return self._op.forward(x)
