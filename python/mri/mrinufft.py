"""mri.mrinufft: an operator with MRI-NUFFT's interface on the SDK's NUFFT (docs/python.md).

Code written for MRI-NUFFT runs on this backend by changing the constructor:

    nufft = mri.mrinufft.MRIFourierOperator(samples, shape, density=density, n_coils=8, smaps=smaps)
    kspace = nufft.op(image); image = nufft.adj_op(kspace); grad = nufft.data_consistency(image, kspace)

MRI-NUFFT's conventions, as it documents them: `samples` are (M, d) (or (shots, samples per shot,
d)) k-space locations normalised to [-0.5, 0.5) (cycles per sample: our cycles/FOV divided by the
matrix size), or in radians [-pi, pi) (divided by 2 pi, as its proper_trajectory does where a
coordinate's magnitude exceeds 0.5); images are (*shape) arrays indexed image[x, y, z]; k-space
(n_coils, M); smaps (n_coils, *shape); the forward transform is exp(-i 2 pi k.x) (type 2), the
adjoint exp(+i ...), unnormalised; the density weights multiply the data in adj_op
(F^H (d .* y)); with smaps, op maps one image to every coil and adj_op sums conj(S_c) F^H y_c.
squeeze_dims drops coil and batch axes of length 1 from what op and adj_op return.
"""

import numpy as np

from . import density as _density
from ._arrays import complex_array, real_array
from ._operators import ExactOperator, NufftOperator

__all__ = ["MRIFourierOperator", "get_operator"]


def _normalised_samples(samples):
    samples = real_array("samples", samples)
    samples = samples.reshape(-1, samples.shape[-1], order="C") if samples.ndim == 3 else samples
    if samples.ndim != 2 or samples.shape[1] not in (2, 3):
        raise ValueError(f"samples: shape {samples.shape}, expected (M, d) or (shots, samples, d), d = 2 or 3")
    if np.max(np.abs(samples)) > 0.5 + 1e-6:  # radians, [-pi, pi)
        samples = samples / (2 * np.pi)
    return np.ascontiguousarray(samples, dtype=np.float32)


class MRIFourierOperator:
    """MRI-NUFFT's FourierOperator interface (op, adj_op, data_consistency, smaps, density) on
    mri.NufftOperator (method="nufft") or mri.ExactOperator ("exact")."""

    backend = "mri"

    def __init__(self, samples, shape, density=False, n_coils=1, smaps=None, squeeze_dims=True,
                 *, method="nufft", tolerance=1e-3, precision=None, backend="cpu"):
        self.shape = tuple(int(n) for n in shape)
        self.ndim = len(self.shape)
        self.samples = _normalised_samples(samples)
        if self.samples.shape[1] != self.ndim:
            raise ValueError(f"samples: {self.samples.shape[1]} coordinates for a {self.ndim}-D shape")
        points = self.samples * np.asarray(self.shape, dtype=np.float32)  # cycles/FOV
        if method == "nufft":
            self._op = NufftOperator(points, self.shape, tolerance=tolerance, precision=precision,
                                     backend=backend)
        elif method == "exact":
            self._op = ExactOperator(points, self.shape, precision=precision or "float32", backend=backend)
        else:
            raise ValueError(f"method: {method!r}, expected 'nufft' or 'exact'")
        self.n_coils = int(n_coils)
        self.n_samples = self.samples.shape[0]
        self.squeeze_dims = squeeze_dims
        self.dtype = np.dtype(np.complex64)
        self.smaps = None
        if smaps is not None:
            self.smaps = np.ascontiguousarray(complex_array("smaps", smaps, (self.n_coils,) + self.shape))
        if density is True:
            self.density = _density.pipe_menon(points, self.shape)[0]
        elif density is False or density is None:
            self.density = None
        else:
            self.density = real_array("density", density, (self.n_samples,)).reshape(-1)

    @property
    def uses_sense(self):
        return self.smaps is not None

    @property
    def uses_density(self):
        return self.density is not None

    def _coil_images(self, data):
        """data as (batch, coils, *shape) images the NUFFT is applied to."""
        data = np.asarray(data)
        if self.uses_sense:
            images = data.reshape((-1,) + self.shape)
            return images[:, None] * self.smaps[None]
        return data.reshape((-1, self.n_coils) + self.shape)

    def _squeeze(self, array):
        if not self.squeeze_dims:
            return array
        if array.shape[0] == 1:
            array = array[0]
            if array.shape[0] == 1 and array.ndim > 1:
                array = array[0]
        return array

    def op(self, data):
        """Image(s) -> k-space (n_coils, M) (with a leading batch axis for several images)."""
        coils = self._coil_images(complex_array("data", data))
        out = np.empty(coils.shape[:2] + (self.n_samples,), dtype=np.complex64)
        for b in range(coils.shape[0]):
            for c in range(coils.shape[1]):
                out[b, c] = self._op.forward(coils[b, c])
        return self._squeeze(out)

    def adj_op(self, coeffs):
        """k-space (n_coils, M) -> coil images (n_coils, *shape), or with smaps the coil-combined
        image (*shape); density-weighted where a density was given."""
        y = complex_array("coeffs", coeffs).reshape((-1, self.n_coils, self.n_samples))
        if self.uses_density:
            y = y * self.density
        images = np.empty(y.shape[:2] + self.shape, dtype=np.complex64)
        for b in range(y.shape[0]):
            if isinstance(self._op, NufftOperator):  # all coils in one pass
                images[b] = np.moveaxis(self._op.adjoint_coils(y[b].T), -1, 0)
            else:
                for c in range(y.shape[1]):
                    images[b, c] = self._op.adjoint(y[b, c])
        if self.uses_sense:
            images = np.sum(np.conj(self.smaps)[None] * images, axis=1, keepdims=True)
        return self._squeeze(images)

    def data_consistency(self, image_data, obs_data):
        """The gradient of 0.5 ||op(x) - y||^2 (density-weighted): adj_op(op(x) - y)."""
        residual = self.op(image_data).reshape(-1) - complex_array("obs_data", obs_data).reshape(-1)
        return self.adj_op(residual.reshape(-1, self.n_coils, self.n_samples))


    def get_lipschitz_cst(self, max_iter=10):
        """The largest eigenvalue of adj_op(op(.)) by power iteration (MRI-NUFFT's name): the
        Lipschitz constant of data_consistency, for gradient steps."""
        rng = np.random.default_rng(0)
        shape = self.shape if self.uses_sense else (self.n_coils,) + self.shape
        x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
        x /= np.linalg.norm(x)
        value = 0.0
        for _ in range(max_iter):
            y = np.asarray(self.adj_op(self.op(x))).reshape(shape)
            value = float(np.linalg.norm(y))
            x = (y / value).astype(np.complex64)
        return value


def get_operator(backend_name="mri"):
    """MRI-NUFFT's factory: the class for a backend name ("mri" is this one)."""
    if backend_name != "mri":
        raise ValueError(f"backend_name: {backend_name!r}: this module provides 'mri' only")
    return MRIFourierOperator
