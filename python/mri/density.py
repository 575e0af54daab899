"""Density compensation weights (mri/density.hpp): the k-space area each sample stands for,
in (cycles/FOV)^d (a Cartesian Nyquist grid gets 1). float32 arrays of M values."""

from . import _mri
from ._arrays import matrix_tuple, points_array


def radial(points, matrix, spokes):
    """Analytic ramp for traj.radial's full-diameter spokes."""
    return _mri.density_radial(points_array("points", points), matrix_tuple(matrix), int(spokes))


def spiral(points, matrix, interleaves, undersampling=1.0):
    """Analytic weights for traj.spiral's interleaves."""
    return _mri.density_spiral(points_array("points", points), matrix_tuple(matrix), int(interleaves),
                               float(undersampling))


def pipe_menon(points, matrix, iterations=20, width=4, oversampling=1.5, threads=0):
    """Pipe and Menon's iteration for any trajectory: (weights, residuals)."""
    return _mri.density_pipe_menon(points_array("points", points), matrix_tuple(matrix),
                                   int(iterations), int(width), float(oversampling), int(threads))
