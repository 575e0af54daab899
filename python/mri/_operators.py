"""The SDK's linear operators from NumPy (docs/python.md, "Operators").

Each has ``forward`` (image -> k-space), ``adjoint`` (k-space -> image), ``normal``
(A^H A), ``ishape`` / ``oshape`` (the array shapes it takes and returns), ``shape``
(rows, columns) as a matrix, and ``dtype`` (complex64: what it takes and returns).
"""

import numpy as np

from . import _cuda, _mri
from ._arrays import complex_array, image_shape, matrix_tuple, points_array, real_array, with_coils


class LinearOperator:
    """Base: subclasses set _op, ishape, oshape."""

    dtype = np.dtype(np.complex64)

    @property
    def shape(self):
        return (int(np.prod(self.oshape)), int(np.prod(self.ishape)))

    def forward(self, x):
        if _cuda.is_cuda_array(x):
            return self._on_device("x", x, self.ishape, self.oshape, "forward_device")
        return self._op.forward(complex_array("x", x, self.ishape))

    def adjoint(self, y):
        if _cuda.is_cuda_array(y):
            return self._on_device("y", y, self.oshape, self.ishape, "adjoint_device")
        return self._op.adjoint(complex_array("y", y, self.oshape))

    @property
    def takes_cuda_arrays(self):
        """Whether forward/adjoint compute on CUDA arrays in place (backend "cuda" operators
        with device entry points: NufftOperator, ExactOperator)."""
        return hasattr(self._op, "forward_device") and self._op.backend == "cuda"

    def _on_device(self, name, value, in_shape, out_shape, call):
        if not hasattr(self._op, call):
            raise TypeError(f"{name}: a CUDA array; {type(self).__name__} takes host arrays (NumPy): "
                            "copy it to the host (mri.torch.LinearOp does)")
        if self._op.backend != "cuda":
            raise ValueError(f"{name}: a CUDA array, but this {type(self).__name__} runs on the "
                             f"{self._op.backend} backend: make it with backend='cuda', or pass a host array")
        return _cuda.apply(name, value, in_shape, out_shape, getattr(self._op, call))

    def normal(self, x):
        """A^H A x."""
        return self.adjoint(self.forward(x))

    __call__ = forward

    def __repr__(self):
        return f"{type(self).__name__}(ishape={self.ishape}, oshape={self.oshape})"


class NufftOperator(LinearOperator):
    """The Kaiser-Bessel gridding NUFFT (mri/nufft.hpp):
    forward (F x)_m ~ sum_n x_n exp(-i 2 pi k_m . x_n / n), adjoint its transpose, unnormalised.

    points: (M, d) float array in cycles/FOV ([-n/2, n/2) per axis; samples up to 3n/2 are used as
    their periodic images). matrix: (nx, ny) or (nx, ny, nz). precision: None picks float32 where
    it reaches the tolerance (down to 1e-5, nufft_min_tolerance in mri/nufft.hpp), float64 below.
    """

    def __init__(self, points, matrix, *, tolerance=1e-3, precision=None, gridding="auto",
                 backend="cpu", threads=0, width=0, oversampling=0.0):
        matrix = matrix_tuple(matrix)
        points = points_array("points", points)
        if precision is None:
            precision = "float64" if tolerance < _mri.NUFFT_FLOAT32_MIN_TOLERANCE else "float32"
        self._op = _mri.NufftOperator(points, matrix, float(tolerance), precision, gridding, backend,
                                      int(threads), int(width), float(oversampling))
        self.matrix = matrix
        self.ishape = image_shape(matrix)
        self.oshape = (points.shape[0],)
        self.precision = precision

    @property
    def backend(self):
        return self._op.backend

    @property
    def kernel_width(self):
        return self._op.kernel_width

    def adjoint_coils(self, y):
        """F^H of each column of y (M, coils) -> (*ishape, coils), each image bitwise adjoint()'s,
        faster than a loop (the kernel weights are evaluated once per block of coils)."""
        y = complex_array("y", y)
        if y.ndim != 2 or y.shape[0] != self.oshape[0]:
            raise ValueError(f"y: shape {y.shape}, expected ({self.oshape[0]}, coils)")
        return self._op.adjoint_coils(y, y.shape[1])


class ExactOperator(LinearOperator):
    """The exact non-uniform DFT (mri/fourier.hpp), O(N M): the NUFFT's reference.
    precision="float64" sums in double; given complex128 arrays it also takes and returns
    complex128 without rounding (what a float64 gradcheck needs). complex64 in, complex64 out."""

    def __init__(self, points, matrix, *, precision="float32", backend="cpu", policy="auto"):
        matrix = matrix_tuple(matrix)
        points = points_array("points", points)
        self._op = _mri.ExactOperator(points, matrix, precision, backend, policy)
        self.matrix = matrix
        self.ishape = image_shape(matrix)
        self.oshape = (points.shape[0],)

    def forward(self, x):
        if self._in_double(x):
            return self._op.forward_f64(_finite_double("x", x, self.ishape))
        return super().forward(x)

    def adjoint(self, y):
        if self._in_double(y):
            return self._op.adjoint_f64(_finite_double("y", y, self.oshape))
        return super().adjoint(y)

    def _in_double(self, value):
        return self._op.precision == "float64" and type(value) is np.ndarray and value.dtype == np.complex128


def _finite_double(name, value, shape):
    """A complex128 NumPy array as the double entry points take it (Fortran order, finite)."""
    if value.shape != tuple(shape):
        raise ValueError(f"{name}: shape {value.shape}, expected {tuple(shape)}")
    if not np.isfinite(value).all():
        raise ValueError(f"{name}: holds NaN or Inf")
    return np.asarray(value, order="F")

    @property
    def backend(self):
        return self._op.backend


class SenseOperator(LinearOperator):
    """SENSE encoding (mri/sense.hpp): (E x)_c = F (S_c x), E^H y = sum_c conj(S_c) F^H y_c, F exact.
    maps: (nx, ny[, nz], coils) as BART's [x, y, z, coils]; k-space (M, coils)."""

    def __init__(self, points, matrix, maps, *, precision="float32", backend="cpu", policy="auto"):
        matrix = matrix_tuple(matrix)
        points = points_array("points", points)
        maps, coils = with_coils("maps", maps, matrix)
        self._op = _mri.SenseOperator(points, matrix, maps, coils, precision, backend, policy)
        self.matrix = matrix
        self.coils = coils
        self.ishape = image_shape(matrix)
        self.oshape = (points.shape[0], coils)


class FieldFourierOperator(LinearOperator):
    """The exact off-resonance-corrected F (mri/offresonance.hpp):
    (A x)_m = sum_x x(x) exp(-2 pi i (k_m . x / n + f(x) t_m)), f the field map in Hz on the image
    grid, t_m the sample times in seconds from the echo; adjoint its conjugate transpose. CPU."""

    def __init__(self, points, matrix, field_map, times, *, precision="float32", backend="cpu"):
        matrix = matrix_tuple(matrix)
        points = points_array("points", points)
        self.ishape = image_shape(matrix)
        field_map = real_array("field_map", field_map, self.ishape)
        times = real_array("times", times, (points.shape[0],))
        self._op = _mri.FieldFourierOperator(points, matrix, field_map, times, precision, backend)
        self.matrix = matrix
        self.oshape = (points.shape[0],)


class SegmentedFieldOperator(LinearOperator):
    """The time-segmented off-resonance F: sum_l B_l .* NUFFT(E_l .* x), L segments (0: the
    smallest L whose stated error meets segment_tolerance), interpolator "least-squares" or
    "hanning"; tolerance is the NUFFT's. segments and segment_error tell what was chosen."""

    def __init__(self, points, matrix, field_map, times, *, segments=0, interpolator="least-squares",
                 segment_tolerance=1e-3, max_segments=32, histogram_bins=64, tolerance=1e-3,
                 precision="float32", backend="cpu"):
        matrix = matrix_tuple(matrix)
        points = points_array("points", points)
        self.ishape = image_shape(matrix)
        field_map = real_array("field_map", field_map, self.ishape)
        times = real_array("times", times, (points.shape[0],))
        self._op = _mri.SegmentedFieldOperator(points, matrix, field_map, times, int(segments), interpolator,
                                               float(segment_tolerance), int(max_segments),
                                               int(histogram_bins), float(tolerance), precision, backend)
        self.matrix = matrix
        self.oshape = (points.shape[0],)

    @property
    def segments(self):
        return self._op.segments

    @property
    def segment_error(self):
        return self._op.segment_error


class ToeplitzNormal(LinearOperator):
    """F^H W F by Toeplitz embedding (mri/toeplitz.hpp): self-adjoint, image -> image, two FFTs on
    the 2x grid per call. Q by the exact sums (method="exact") or one NUFFT ("nufft", tolerance).
    weights: None (ones) or one non-negative weight per sample."""

    def __init__(self, points, matrix, *, weights=None, method="exact", tolerance=1e-3,
                 precision=None, backend="cpu", policy="auto"):
        matrix = matrix_tuple(matrix)
        points = points_array("points", points)
        if precision is None:  # as NufftOperator's rule for method="nufft"
            nufft64 = method == "nufft" and tolerance < _mri.NUFFT_FLOAT32_MIN_TOLERANCE
            precision = "float64" if nufft64 else "float32"
        if weights is not None:
            weights = real_array("weights", weights, (points.shape[0],))
        self._op = _mri.ToeplitzNormal(points, matrix, weights, method, float(tolerance), precision,
                                       backend, policy)
        self.matrix = matrix
        self.ishape = self.oshape = image_shape(matrix)

    def forward(self, x):
        return self._op.apply(complex_array("x", x, self.ishape))

    adjoint = forward
    normal = forward
    __call__ = forward


class ImageWarp(LinearOperator):
    """The warp of a reference image into a motion state (mri/mcir.hpp):
    (W x)(v) = J(v) x(v + u(v)), trilinear interpolation with clamp-to-edge, J = 1 or the
    Jacobian weight (jacobian_weighting); adjoint the exact transpose of that interpolation.
    field: (nx, ny[, nz], 3) float32 displacements u in voxels, MotionEstimator's convention:
    MotionEstimator.estimate(fixed=state, moving=reference) returns it. A zero field is the
    identity (bitwise). CPU."""

    def __init__(self, field, matrix, *, jacobian_weighting=False):
        matrix = matrix_tuple(matrix)
        self.ishape = self.oshape = image_shape(matrix)
        field = real_array("field", field, self.ishape + (3,))
        self._op = _mri.ImageWarp(field, matrix, bool(jacobian_weighting))
        self.matrix = matrix

    @property
    def is_identity(self):
        return self._op.is_identity
