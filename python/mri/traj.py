"""Trajectory generators (mri/trajectory.hpp): (M, d) float32 points in cycles/FOV, strictly
inside [-n/2, n/2) per axis, readout fastest. d = 2 for a 2D matrix, 3 for a 3D one."""

from . import _mri
from ._arrays import matrix_tuple, seed_value


def cartesian(matrix):
    """Every grid point, in voxel-index order (kx fastest)."""
    return _mri.traj_cartesian(matrix_tuple(matrix))


def radial(matrix, spokes, readout, golden=False):
    """2D radial: full-diameter spokes of `readout` samples; uniform angles pi s / spokes, or the
    golden angle (111.246 degrees) with golden=True."""
    return _mri.traj_radial(matrix_tuple(matrix), int(spokes), int(readout), bool(golden))


def spiral(matrix, interleaves, samples_per_interleave, undersampling=1.0):
    """2D Archimedean spiral, arms `undersampling` cycles/FOV apart (1: Nyquist)."""
    return _mri.traj_spiral(matrix_tuple(matrix), int(interleaves), int(samples_per_interleave),
                            float(undersampling))


def propeller(matrix, blades, lines_per_blade, readout):
    return _mri.traj_propeller(matrix_tuple(matrix), int(blades), int(lines_per_blade), int(readout))


def stack_of_stars(matrix, spokes, readout, golden=True):
    return _mri.traj_stack_of_stars(matrix_tuple(matrix), int(spokes), int(readout), bool(golden))


def koosh(matrix, spokes, readout):
    """3D radial spokes through the centre on a Fibonacci lattice of directions."""
    return _mri.traj_koosh(matrix_tuple(matrix), int(spokes), int(readout))


def uniform_random(matrix, points, seed=0):
    return _mri.traj_uniform_random(matrix_tuple(matrix), int(points), seed_value(seed))
