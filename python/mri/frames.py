"""Frames from one continuous acquisition (mri/frames.hpp, docs/dynamic.md): readouts sorted into
time frames or respiratory states, then reconstructed jointly by mri.reconstruct_frames.

The acquisition is readout-major: R readouts (spokes) of S samples each, consecutive in the
trajectory (BART's [3, samples, lines] order), readout r acquired at r * readout_seconds unless
`times` (one per readout) says otherwise. A binning is a dict: "frames" (a list of int64 arrays of
readout indices, ascending), "readouts_per_frame", "unassigned" (readouts in no frame), and for
amplitude bins "signal" (the oriented signal; bin 0 = end-expiration), "bin_edges", "flipped";
"method", "source", "note".
"""

import numpy as np

from . import _mri
from ._arrays import _asarray, real_array, trajectory_points

__all__ = ["bin_by_time", "bin_by_amplitude", "self_gating_signal", "split_frames"]


def bin_by_time(readouts, readouts_per_frame, step=0):
    """Frames of `readouts_per_frame` consecutive readouts every `step` readouts (0: disjoint)."""
    return _mri.bin_by_time(_integer("readouts", readouts), _integer("readouts_per_frame", readouts_per_frame),
                            _integer("step", step))


def bin_by_amplitude(signal, bins, expiration="auto"):
    """Equal-count amplitude bins of a gating signal (one value per readout; sizes differ by at
    most one), bin 0 at end-expiration. expiration: "auto" (from the signal's shape), "low" or
    "high" (which end of the signal is end-expiration)."""
    values = _asarray("signal", signal)
    if values.dtype.kind == "c":
        raise TypeError(f"signal: complex dtype {values.dtype}, expected a real array")
    if values.ndim != 1:
        raise ValueError(f"signal: shape {values.shape}, expected one value per readout (R,)")
    return _mri.bin_by_amplitude(np.asarray(values, dtype=np.float64), _integer("bins", bins), str(expiration))


def self_gating_signal(trajectory, kspace, samples_per_readout, readout_seconds, *, times=None,
                       low_hz=0.1, high_hz=0.5, window_seconds=30.0, peak_ratio=100.0):
    """The respiratory signal from the data's k-space centre (XD-GRASP; mri/frames.hpp): a dict
    with "values" (one per readout, float64), "breathing_peak_found", "peak_hz", "peak_ratio",
    "source", "note"."""
    points, samples, _, coils = _acquisition(trajectory, kspace, None)
    return _mri.self_gating_signal(points, samples, coils, _integer("samples_per_readout", samples_per_readout),
                                   float(readout_seconds), _times(times), float(low_hz), float(high_hz),
                                   float(window_seconds), float(peak_ratio))


def split_frames(trajectory, kspace, samples_per_readout, binning, *, weights=None, readout_seconds=1.0,
                 times=None):
    """One (points (M_f, d), kspace (M_f, coils), weights or None) per frame of `binning` (a dict
    from bin_by_* or a list of readout-index arrays): what mri.reconstruct_frames takes."""
    points, samples, weights, coils = _acquisition(trajectory, kspace, weights)
    frames = binning["frames"] if isinstance(binning, dict) else binning
    frames = [[int(r) for r in np.asarray(f).reshape(-1)] for f in frames]
    return _mri.split_frames(points, samples, weights, coils, _integer("samples_per_readout", samples_per_readout),
                             float(readout_seconds), _times(times), frames)


def _integer(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: {value!r} ({type(value).__name__}) is not an integer")
    return int(value)


def _times(times):
    return None if times is None else [float(t) for t in np.asarray(times, dtype=np.float64).reshape(-1)]


def _acquisition(trajectory, kspace, weights):
    from . import _kspace  # the package's rule for k-space arrays (coil-major)
    points = trajectory_points(trajectory)
    samples, coils = _kspace(kspace, points.shape[0])
    if weights is not None:
        weights = real_array("weights", weights).reshape(-1, order="F")
    return points, samples, weights, coils
