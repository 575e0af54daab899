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

__all__ = ["bin_by_time", "bin_by_amplitude", "self_gating_signal", "read_gating_signal", "plan_frames",
           "split_frames", "join_frames"]


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


def read_gating_signal(path, readouts):
    """A gating signal from a file (mri::read_gating_signal): a BART array (base name, .cfl or
    .hdr: the real parts) or a text file of one number per line ('#' starts a comment), with one
    value per readout. A dict as self_gating_signal's."""
    import os

    return _mri.read_gating_signal(os.fspath(path), _integer("readouts", readouts))


def plan_frames(trajectory, kspace, samples_per_readout, *, bins=0, gating="self", frames_readouts=0,
                frames_step=0, fall_back_to_time=False, expiration="auto", readout_seconds=1.0, times=None,
                header_signal=None, low_hz=0.1, high_hz=0.5, window_seconds=30.0, peak_ratio=100.0):
    """The binning `mri recon --bins N [--gating self|header|FILE] [--frames-spokes K]` makes
    (mri::plan_frames): `bins` respiratory states by the amplitude of the gating signal ("self":
    from the data; "header": header_signal, one value per readout, e.g. ISMRMRD's physiology
    stamps; else a signal file as read_gating_signal reads), or time frames of `frames_readouts`
    readouts every `frames_step` (one of bins and frames_readouts). fall_back_to_time: when
    self-gating finds no breathing peak, `bins` time frames instead (the note says so). A dict as
    bin_by_amplitude's."""
    points, samples, _, coils = _acquisition(trajectory, kspace, None)
    request = {"bins": _integer("bins", bins), "gating": _gating_name(gating),
               "frames_readouts": _integer("frames_readouts", frames_readouts),
               "frames_step": _integer("frames_step", frames_step), "fall_back_to_time": bool(fall_back_to_time),
               "expiration": str(expiration), "low_hz": float(low_hz), "high_hz": float(high_hz),
               "window_seconds": float(window_seconds), "peak_ratio": float(peak_ratio)}
    header = None if header_signal is None else _times(header_signal)
    return _mri.plan_frames(points, samples, coils, _integer("samples_per_readout", samples_per_readout),
                            float(readout_seconds), _times(times), request, header)


def join_frames(frames):
    """Frames (as split_frames returns them: (points, kspace[, weights]) tuples) joined into one
    acquisition (mri::join_frames): (points, kspace (M, coils), weights or None), the frames'
    readouts in order. What coil maps and compression are computed from once for a series."""
    items = []
    for i, frame in enumerate(frames):
        if not isinstance(frame, (tuple, list)) or len(frame) not in (2, 3):
            raise TypeError(f"frames[{i}]: expected a (points, kspace[, weights]) tuple")
        points, samples, weights, coils = _acquisition(frame[0], frame[1], frame[2] if len(frame) == 3 else None)
        items.append((points, samples, weights, coils))
    if not items:
        raise ValueError("frames: empty; expected at least one frame")
    return _mri.join_frames(items)


def _gating_name(gating):
    """"self", "header" or a signal file's path (str or os.PathLike)."""
    import os

    return os.fspath(gating)


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
