"""Argument conversion: what users pass, into the arrays the extension reads in place.

The rule (docs/python.md, "Arrays"): any integer, unsigned, floating or complex array (or
anything ``numpy.asarray`` reads as one) is converted once to the SDK's storage type: complex64
for images, k-space samples and coil maps, float32 for trajectory points and weights. float64
and complex128 are rounded to single precision (the SDK stores complex<float>; precision=
"float64" computes in double). bool, object and string arrays are refused with a TypeError
naming the argument, and so are complex points or weights. Images, maps and samples are passed
in Fortran order (axis 0 fastest, the SDK's and BART's layout); an array already complex64 and
Fortran-ordered is used as it is, without a copy.
"""

import numpy as np

_NUMERIC = "iufc"


def _asarray(name, value):
    if hasattr(value, "__cuda_array_interface__") or (
        hasattr(value, "is_cuda") and getattr(value, "is_cuda")
    ):
        raise TypeError(
            f"{name}: a CUDA array; this function takes host arrays (NumPy). NufftOperator and "
            "ExactOperator made with backend='cuda' take CUDA arrays; mri.torch.LinearOp moves "
            "other tensors to the host and back"
        )
    try:
        array = np.asarray(value)
    except Exception as error:  # e.g. a tensor that requires grad
        raise TypeError(f"{name}: cannot be read as an array ({error})") from None
    if array.dtype.kind not in _NUMERIC:
        raise TypeError(
            f"{name}: dtype {array.dtype} is not numeric (expected complex64; other integer, "
            "float and complex dtypes are converted)"
        )
    return array


def complex_array(name, value, shape=None):
    """value as a Fortran-ordered complex64 array of `shape` (None: any shape)."""
    if (
        type(value) is np.ndarray
        and value.dtype == np.complex64
        and value.flags.f_contiguous
        and (shape is None or value.shape == shape)
    ):
        return value
    array = _asarray(name, value)
    if shape is not None and array.shape != tuple(shape):
        raise ValueError(f"{name}: shape {array.shape}, expected {tuple(shape)}")
    return np.asarray(array, dtype=np.complex64, order="F")


def real_array(name, value, shape=None):
    """value as a Fortran-ordered float32 array (complex refused)."""
    array = _asarray(name, value)
    if array.dtype.kind == "c":
        raise TypeError(f"{name}: complex dtype {array.dtype}, expected a real array (float32)")
    if shape is not None and array.shape != tuple(shape):
        raise ValueError(f"{name}: shape {array.shape}, expected {tuple(shape)}")
    return np.asarray(array, dtype=np.float32, order="F")


def points_array(name, value):
    """Trajectory points as a C-ordered float32 (M, d) array, d = 2 or 3, cycles/FOV."""
    array = _asarray(name, value)
    if array.dtype.kind == "c":
        raise TypeError(
            f"{name}: complex dtype {array.dtype}; points are real (M, d) arrays "
            "(mri.io.bart_points converts a BART trajectory)"
        )
    if array.ndim != 2 or array.shape[1] not in (2, 3):
        raise ValueError(f"{name}: shape {array.shape}, expected (M, 2) or (M, 3)")
    return np.ascontiguousarray(array, dtype=np.float32)


def bart_points(traj):
    """BART's trajectory array [3, samples, lines, ...] (cycles/FOV, complex or real) as (M, 3)
    points, sample index fastest (the order of BART's k-space samples)."""
    array = _asarray("trajectory", traj)
    if array.dtype.kind == "c":
        if np.any(array.imag != 0):
            raise ValueError("trajectory: a BART trajectory with nonzero imaginary parts")
        array = array.real
    if array.ndim < 1 or array.shape[0] != 3:
        raise ValueError(f"trajectory: shape {array.shape}, a BART trajectory is [3, samples, ...]")
    return np.ascontiguousarray(array.reshape(3, -1, order="F").T, dtype=np.float32)


def is_points(array):
    """A 2-D (M, 2) or (M, 3) array is points (so a (3, 3) array is three points); anything else
    is taken as a BART [3, samples, ...] trajectory."""
    return array.ndim == 2 and array.shape[1] in (2, 3)


def trajectory_points(traj):
    """Points from either form: (M, 2) / (M, 3) points, or a BART [3, samples, ...] array."""
    array = _asarray("trajectory", traj)
    return points_array("trajectory", array) if is_points(array) else bart_points(array)


def matrix_tuple(matrix):
    try:
        values = tuple(int(n) for n in matrix)
    except (TypeError, ValueError):
        raise TypeError(f"matrix: {matrix!r} is not a sequence of 2 or 3 integer extents") from None
    if len(values) not in (2, 3):
        raise ValueError(f"matrix: {values} needs 2 or 3 extents: (nx, ny) or (nx, ny, nz)")
    return values


def image_shape(matrix):
    """The image array shape of a matrix: (nx, ny) for 2D (nz = 1 dropped), (nx, ny, nz)."""
    return matrix[:2] if len(matrix) == 2 or matrix[2] == 1 else matrix


def with_coils(name, value, matrix):
    """Coil maps (nx, ny[, nz], coils) as (Fortran complex64 array, coils)."""
    array = _asarray(name, value)
    shape = image_shape(matrix)
    voxels = int(np.prod(shape))
    if array.size % voxels != 0 or array.shape[: len(shape)] != shape:
        raise ValueError(f"{name}: shape {array.shape}, expected {shape + ('coils',)}")
    return np.asarray(array, dtype=np.complex64, order="F"), array.size // voxels


def seed_value(seed):
    """A random seed as the SDK takes it (uint64)."""
    seed = int(seed)
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed = {seed}: must be in [0, 2^64)")
    return seed
