"""The free-breathing phantom simulation (mri/breathing.hpp, docs/dynamic.md): the analytic phantom
moved by an affine map per readout (superior-inferior translation amplitude_voxels * s and an
anterior-posterior stretch 1 + ap_expansion * s at breathing state s, 0 = end-expiration; 2D: y is
superior-inferior, x stretched), sampled exactly in k-space (no inverse crime), s(t) Lujan et al.'s
sin^(2n) trace (sharpness n) with cycle-to-cycle `irregularity`."""

from . import _mri
from ._arrays import matrix_tuple, seed_value, trajectory_points

__all__ = ["simulate", "displacement"]


def _options(amplitude_voxels, ap_expansion, period_seconds, readout_seconds, sharpness, irregularity, seed):
    return _mri.BreathingOptions(float(amplitude_voxels), float(ap_expansion), float(period_seconds),
                                 float(readout_seconds), int(sharpness), float(irregularity), seed_value(seed))


def simulate(trajectory, matrix, samples_per_readout, *, coils=1, snr=0.0, noise_seed=1, amplitude_voxels=4.0,
             ap_expansion=0.05, period_seconds=4.0, readout_seconds=0.005, sharpness=3, irregularity=0.1, seed=1):
    """A free-breathing acquisition along `trajectory` (readout-major, `samples_per_readout` samples
    per readout, readout r at r * readout_seconds): a dict with "kspace" (M, coils) complex64
    (coils == 1: no coil maps; else the simulated array of mri.simulated_maps; noise at `snr` as
    mri.add_noise, none for 0), "trace" (the breathing state per readout, float64),
    "readout_seconds" and "samples_per_readout" (the layout mri.frames takes)."""
    matrix = matrix_tuple(matrix)
    options = _options(amplitude_voxels, ap_expansion, period_seconds, readout_seconds, sharpness, irregularity, seed)
    return _mri.simulate_breathing(trajectory_points(trajectory), matrix, int(samples_per_readout), int(coils),
                                   options, float(snr), seed_value(noise_seed))


def displacement(matrix, fixed_state, moving_state, *, amplitude_voxels=4.0, ap_expansion=0.05):
    """The true displacement (nx, ny[, nz], 3) from breathing state `fixed_state` to `moving_state`
    in MotionEstimator's convention (moving(x + w(x)) = fixed(x)): with fixed = a state and
    moving = the reference state, the field mri.reconstruct_motion_corrected takes for that state."""
    options = _options(amplitude_voxels, ap_expansion, 4.0, 0.005, 3, 0.1, 1)
    return _mri.breathing_displacement(matrix_tuple(matrix), float(fixed_state), float(moving_state), options)
