"""Files: BART's .cfl/.hdr in NumPy layout (docs/python.md, "BART files").

read_cfl returns what BART's own python/cfl.py readcfl returns: an array of the header's
dimensions with trailing 1s dropped, axis 0 the first (fastest) BART dimension, complex64, in
Fortran order (a view of the file's data as read, no reordering). So a trajectory is
[3, samples, lines], k-space [1, samples, lines, coils], maps [x, y, z, coils], an image [x, y]
or [x, y, z]; index them as BART numbers its dimensions.
"""

import os

import numpy as np

from . import _mri
from ._arrays import complex_array


def _base(path):
    path = os.fspath(path)
    for ext in (".cfl", ".hdr"):
        if path.endswith(ext):
            return path[: -len(ext)]
    return path


def read_cfl(path):
    """BART's base.cfl/base.hdr (`path` with or without an extension) as a NumPy array."""
    array = _mri.read_cfl(_base(path))
    dims = list(array.shape)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return array.reshape(dims, order="F")


def write_cfl(path, array):
    """`array` (any numeric dtype, converted to complex64) as base.cfl/base.hdr, its axes BART's
    dimensions in order (axis 0 first)."""
    data = complex_array("array", array)
    dims = list(data.shape) or [1]
    _mri.write_cfl(_base(path), dims, data.reshape(-1, order="F"))


def bart_points(traj):
    """BART's [3, samples, lines, ...] trajectory as (M, 3) float32 points, sample fastest."""
    from ._arrays import bart_points as convert

    return convert(traj)


def to_bart_trajectory(points, lines=1):
    """(M, d) points as BART's [3, M / lines, lines] complex64 trajectory (kz = 0 for d = 2)."""
    points = np.asarray(points, dtype=np.float32)
    full = np.zeros((points.shape[0], 3), dtype=np.float32)
    full[:, : points.shape[1]] = points
    return np.asarray(full.T, dtype=np.complex64).reshape(3, -1, lines, order="F")


def _io():
    from . import _mri_io  # libmri_io and HDF5, loaded on first use

    return _mri_io


def read_nifti(path):
    """A NIfTI-1 file (.nii, .nii.gz; float32 or complex64) through libmri_io: a dict with "data"
    (nx, ny, nz, series) complex64 (magnitude files as real values), "voxel_mm", "values"
    ("magnitude" or "complex"), "qform" and "sform" (3 x 4 voxel -> RAS mm)."""
    return _io().read_nifti(os.fspath(path))


def write_nifti(path, images, voxel_mm=(1.0, 1.0, 1.0), complex=False):
    """images (nx, ny[, nz[, series]]) as NIfTI-1 (.nii or .nii.gz): float32 magnitude, or
    complex64 with complex=True; identity orientation (mri/io/nifti.hpp)."""
    data = complex_array("images", images)
    if data.ndim < 2 or data.ndim > 4:
        raise ValueError(f"images: shape {data.shape}, expected (nx, ny[, nz[, series]])")
    dims = list(data.shape) + [1] * (4 - data.ndim)
    _io().write_nifti(os.fspath(path), data.reshape(-1, order="F"), dims,
                      [float(v) for v in voxel_mm], bool(complex))


def read_ismrmrd(path, units="auto", group="dataset"):
    """ISMRMRD raw data through libmri_io: {"header": {...}, "items": [{"points" (M, d),
    "kspace" (M, coils), "weights", "slice", "repetition", ..., "geometry"}], "units", "notes"}.
    Each item's points, kspace and weights go to mri.reconstruct as they are. units: how the
    file's trajectory is read, "auto", "cycles" (cycles/FOV) or "normalized" ([-0.5, 0.5))."""
    return _io().read_ismrmrd(os.fspath(path), units, group)


def write_ismrmrd(path, items, matrix, *, fov_mm=None, trajectory="other", readouts=1, units="cycles"):
    """Raw data as a new ISMRMRD file (mri/io/ismrmrd.hpp: written through a temporary file):
    items are dicts with "points" (M, d) and "kspace" (M,) or (M, coils), optionally "geometry"
    (read_dir, phase_dir, slice_dir, position), each one slice split into `readouts`
    acquisitions; every item has the same coils and samples. The header: matrix as encoded and
    recon matrix, fov_mm (default 1 mm voxels), the trajectory name, the coils. units: the stored
    trajectory's, "cycles" (cycles/FOV) or "normalized"."""
    from ._arrays import matrix_tuple, points_array

    matrix = matrix_tuple(matrix)
    full = list(matrix) + [1] * (3 - len(matrix))
    fov = [float(v) for v in (fov_mm if fov_mm is not None else full)]
    prepared, coils = [], None
    for i, item in enumerate(items):
        kspace = complex_array(f"items[{i}].kspace", item["kspace"])
        kspace = kspace.reshape(kspace.shape[0], -1, order="F")
        coils = kspace.shape[1] if coils is None else coils
        prepared.append({"points": points_array(f"items[{i}].points", item["points"]),
                         "kspace": np.asfortranarray(kspace), "geometry": item.get("geometry")})
    header = {"encoded_matrix": full, "recon_matrix": full, "encoded_fov_mm": fov, "recon_fov_mm": fov,
              "trajectory": trajectory, "coils": coils or 1}
    _io().write_ismrmrd(os.fspath(path), prepared, header, int(readouts), units)
