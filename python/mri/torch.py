"""mri.torch: the SDK's operators as differentiable PyTorch modules (docs/python.md, "PyTorch").

LinearOp(op) wraps any mri operator (NufftOperator, ExactOperator, SenseOperator,
ToeplitzNormal, or anything with forward/adjoint/ishape/oshape). Its forward is op.forward and its
backward op.adjoint (the vector-Jacobian product of a complex-linear map A is A^H g); the
adjoint's backward is op.forward. Tensors of op.ishape, or with one leading batch dimension
(each item in turn). Complex tensors come back in their own dtype (complex64 or complex128; a
real input gives the matching complex dtype) and on their own device.

The SDK computes on host arrays of complex64: a tensor is copied to a host NumPy array and the
result back (a CUDA tensor too; backend="cuda" in the operator runs the SDK's CUDA backend from
that host copy). complex128 tensors are rounded to complex64 at that boundary, so the finite
differences of a float64 gradcheck need eps = 1e-2 (the map is linear: a large eps has no
truncation error; with 1e-6 and 1e-3 the rounding fails it; docs/python.md).
"""

import numpy as np
import torch

__all__ = ["LinearOp"]

_COMPLEX_OF = {torch.float32: torch.complex64, torch.float64: torch.complex128,
               torch.complex64: torch.complex64, torch.complex128: torch.complex128}


def _apply(function, x, in_shape):
    """function (NumPy -> NumPy) on x of in_shape or (batch, *in_shape), as a tensor like x."""
    if x.dtype not in _COMPLEX_OF:
        raise TypeError(f"x: dtype {x.dtype}; expected a complex or real floating tensor")
    dtype = _COMPLEX_OF[x.dtype]
    host = x.detach().resolve_conj().cpu().numpy() if x.is_complex() else x.detach().cpu().numpy()
    if tuple(host.shape) == tuple(in_shape):
        out = function(host)
    elif host.ndim == len(in_shape) + 1 and tuple(host.shape[1:]) == tuple(in_shape):
        out = np.stack([function(item) for item in host])
    else:
        raise ValueError(f"x: shape {tuple(host.shape)}, expected {tuple(in_shape)} or (batch, *{tuple(in_shape)})")
    return torch.from_numpy(np.ascontiguousarray(out)).to(device=x.device, dtype=dtype)


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, forward, adjoint, in_shape, out_shape):
        ctx.adjoint, ctx.out_shape, ctx.real_input = adjoint, out_shape, not x.is_complex()
        return _apply(forward, x, in_shape)

    @staticmethod
    def backward(ctx, grad):
        g = _apply(ctx.adjoint, grad, ctx.out_shape)
        if ctx.real_input:  # d/dx of a real input: the real part of A^H g
            g = g.real
        return g, None, None, None, None


class LinearOp(torch.nn.Module):
    """An mri operator as an autograd-aware module: forward(x) = A x, adjoint(y) = A^H y,
    normal(x) = A^H A x; gradients flow through each by the other."""

    def __init__(self, op):
        super().__init__()
        self.op = op
        self.ishape = tuple(op.ishape)
        self.oshape = tuple(op.oshape)

    def forward(self, x):
        return _Linear.apply(x, self.op.forward, self.op.adjoint, self.ishape, self.oshape)

    def adjoint(self, y):
        return _Linear.apply(y, self.op.adjoint, self.op.forward, self.oshape, self.ishape)

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

    def forward(self, y):
        return self._op.adjoint(y)

    def adjoint(self, x):
        return self._op.forward(x)
