"""CUDA arrays in and out of the operators without a host copy (docs/python.md, "CUDA arrays").

A CUDA array is an object exposing ``__cuda_array_interface__`` (CuPy, Numba, PyTorch CUDA
tensors) or DLPack on a CUDA device (``__dlpack_device__()`` of type kDLCUDA or kDLCUDAManaged).
NufftOperator and ExactOperator made with backend="cuda" compute on it in place on the device.
The layout rule is NumPy's (axis 0 fastest, Fortran order) and the dtype complex64: an array
already so is read where it lies; another order or a numeric dtype is converted once on the device
by the array's own library (a device copy, never a host one), with the host rule for dtypes. The
result is an array of the input's library on the input's device: a PyTorch tensor for a tensor, a
CuPy array for anything else.
"""

_KDL_CUDA, _KDL_CUDA_MANAGED = 2, 13


def is_cuda_array(value):
    """Whether value is a CUDA array (a CPU tensor's __cuda_array_interface__ raises AttributeError)."""
    if hasattr(value, "__cuda_array_interface__"):
        return True
    device = getattr(value, "__dlpack_device__", None)
    if device is None:
        return False
    try:
        return device()[0] in (_KDL_CUDA, _KDL_CUDA_MANAGED)
    except Exception:
        return False


def _is_torch(value):
    return type(value).__module__.split(".")[0] == "torch"


def _native(name, value):
    """value as a PyTorch tensor or a CuPy array, sharing its memory."""
    if _is_torch(value) or type(value).__module__.split(".")[0] == "cupy":
        return value
    try:
        import cupy
    except ImportError:
        cupy = None
    try:
        if cupy is not None:
            return cupy.asarray(value) if hasattr(value, "__cuda_array_interface__") else cupy.from_dlpack(value)
        import torch

        if hasattr(value, "__cuda_array_interface__"):
            return torch.as_tensor(value, device="cuda")  # reads the interface in place
        return torch.from_dlpack(value)
    except ImportError:
        raise TypeError(f"{name}: a CUDA array of {type(value).__name__}; reading it needs CuPy or PyTorch") from None


def _reversed_axes(ndim):
    return tuple(reversed(range(ndim)))


def _torch_fortran_complex64(name, x, shape):
    import torch

    if x.dtype == torch.bool or x.is_quantized:
        raise TypeError(f"{name}: dtype {x.dtype} is not numeric (expected complex64)")
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name}: shape {tuple(x.shape)}, expected {tuple(shape)}")
    x = x.detach().resolve_conj().to(torch.complex64)
    axes = _reversed_axes(x.ndim)
    return x.permute(axes).contiguous().permute(axes)  # Fortran order; no copy when it is already


def _cupy_fortran_complex64(name, x, shape):
    import cupy

    if x.dtype.kind not in "iufc":
        raise TypeError(f"{name}: dtype {x.dtype} is not numeric (expected complex64)")
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name}: shape {tuple(x.shape)}, expected {tuple(shape)}")
    with x.device:
        return cupy.asfortranarray(x.astype(cupy.complex64, copy=False))


def _pointer(x):
    return x.data_ptr() if _is_torch(x) else x.data.ptr


def _empty_like(x, shape):
    """A Fortran-ordered complex64 array of shape on x's device, of x's library."""
    if _is_torch(x):
        import torch

        axes = _reversed_axes(len(shape))
        return torch.empty(tuple(reversed(shape)), dtype=torch.complex64, device=x.device).permute(axes)
    import cupy

    with x.device:
        return cupy.empty(shape, dtype=cupy.complex64, order="F")


def apply(name, value, in_shape, out_shape, device_call):
    """device_call(input pointer, output pointer) on value (a CUDA array of in_shape) into a new
    CUDA array of out_shape, of value's library."""
    x = _native(name, value)
    x = _torch_fortran_complex64(name, x, in_shape) if _is_torch(x) else _cupy_fortran_complex64(name, x, in_shape)
    out = _empty_like(x, out_shape)
    device_call(_pointer(x), _pointer(out))
    return out
