"""mri: iterative reconstruction of non-Cartesian MRI, the C++/CUDA SDK from NumPy and PyTorch.

Layout (docs/python.md): image arrays are (nx, ny) or (nx, ny, nz), indexed image[x, y, z];
trajectories are (M, d) points in cycles per field of view (or BART's [3, samples, lines] arrays
where a function says so); multi-coil k-space (M, coils); coil maps (nx, ny[, nz], coils).
"""

from . import _mri
from ._arrays import (_asarray, complex_array, image_shape, is_points, matrix_tuple, points_array,
                      real_array, seed_value, trajectory_points, with_coils)
from ._mri import CudaError, Error, InvalidArgument, IoError, Unsupported
from ._operators import (ExactOperator, FieldFourierOperator, ImageWarp, LinearOperator, NufftOperator,
                         SegmentedFieldOperator, SenseOperator, ToeplitzNormal)

__version__ = _mri.__version__

__all__ = [
    "Error", "InvalidArgument", "IoError", "CudaError", "Unsupported",
    "LinearOperator", "NufftOperator", "ExactOperator", "SenseOperator", "ToeplitzNormal",
    "FieldFourierOperator", "SegmentedFieldOperator", "ImageWarp",
    "reconstruct", "reconstruct_batch", "reconstruct_frames", "reconstruct_motion_corrected", "reconstruct_motion_chain", "frames", "breathing", "cuda_available", "cuda_unavailable_reason",
    "phantom", "phantom_kspace", "simulated_maps", "add_noise", "psnr",
    "estimate_sensitivities", "MotionEstimator", "synthetic_motion", "traj", "density", "io",
]


def cuda_available():
    """True where the CUDA plugin of this build loads and a device is usable."""
    return _mri.cuda_available()


def cuda_unavailable_reason():
    return _mri.cuda_unavailable_reason()


def _kspace(kspace, samples):
    """k-space of any shape whose Fortran-order values are coil-major (BART's [1, samples, lines,
    coils], or (M, coils), or (M,)): (flat complex64 array, coils)."""
    array = complex_array("kspace", kspace)
    if array.size == 0 or array.size % samples != 0:
        raise ValueError(f"kspace: {array.size} values are not whole coils of {samples} samples")
    return array.reshape(-1, order="F"), array.size // samples


def reconstruct(trajectory, kspace, matrix, *, weights=None, sens=None, lam=0.0, iterations=20,
                method="auto", backend="auto", units="auto", field_map=None, times=None, **options):
    """mri::reconstruct: CG on (F^H W F + lam R^H R) x = F^H W D, SENSE with several coils, or a
    proximal solver with sparse `terms`. Returns (image, report): the image (nx, ny[, nz])
    complex64 and the ReconReport as a dict.

    trajectory: (M, d) points or BART's [3, samples, lines] array (cycles/FOV).
    kspace: BART's [1, samples, lines, coils] or (M,) / (M, coils).
    weights: density compensation, M values. sens: maps (nx, ny[, nz], coils).
    field_map: off-resonance in Hz on the image grid (nx, ny[, nz]), with times: each sample's
    time in seconds from the echo (M values; mri/offresonance.hpp).
    units: "bart" (lam in BART's pics units, image in BART's scale: what `mri recon` does with
    BART inputs), "sdk" (lam and image ours, as with ISMRMRD input), or "auto" (the tool's rule:
    "bart" for a BART trajectory array, "sdk" for (M, d) points); report["units"] says which.
    options: every other ReconOptions field by name (docs/python.md): tolerance, regularizer,
    normal, precision, terms (BART -R specs or dicts), solver, admm_rho, admm_cg_iterations,
    admm_cg_tolerance, power_iterations, fista_power_iterations, tv_prox_iterations,
    cycle_spinning, seed, scaling, nufft_tolerance, gridding,
    policy, devices, memory_limit, maps, map_method, calibration, mask_threshold, espirit_kernel,
    espirit_threshold, espirit_crop, virtual_coils, segments, segment_interpolator,
    segment_tolerance, max_segments, histogram_bins, q_cache_dir, on_iteration, on_phase.
    """
    matrix = matrix_tuple(matrix)
    units = _units(units, trajectory)
    item = _item(trajectory, kspace, weights, times)
    sens, sens_coils, field_map = _shared(matrix, sens, field_map)
    options = _options(options, lam=lam, iterations=iterations, method=method, backend=backend, units=units)
    image, report = _mri.reconstruct(*item, matrix, sens, sens_coils, field_map, options)
    report["units"] = units
    return image, report


def reconstruct_batch(items, matrix, *, jobs=1, share_q=True, errors="raise", sens=None, lam=0.0,
                      iterations=20, method="auto", backend="auto", units="auto", field_map=None,
                      **options):
    """mri::reconstruct_batch: every item through reconstruct with the same options, `jobs` at a
    time on host threads, one Q per distinct trajectory (mri/batch.hpp). items: dicts with
    "trajectory" (or "points", as read_ismrmrd's items), "kspace", optional "weights", "times";
    or (trajectory, kspace) pairs. Returns [(image, report), ...] in the items' order, each
    report with "threads" (its OpenMP team). errors: "raise" raises the first failed item's
    exception (its attribute `item` the index) after the batch; "return" puts the exception in
    that item's place. Images are bitwise reconstruct's on each item at its team (mri/batch.hpp).
    units "auto": from the first item's trajectory."""
    if errors not in ("raise", "return"):
        raise ValueError(f"errors: {errors!r}, expected 'raise' or 'return'")
    matrix = matrix_tuple(matrix)
    prepared, first = [], None
    for i, entry in enumerate(items):
        if isinstance(entry, dict):
            unknown = set(entry) - {"trajectory", "points", "kspace", "weights", "times"}
            known = {k: entry.get(k) for k in ("weights", "times")}
            trajectory = entry["trajectory"] if "trajectory" in entry else entry["points"]
            kspace = entry["kspace"]
        else:
            unknown, known = set(), {"weights": None, "times": None}
            trajectory, kspace = entry
        if unknown:
            raise TypeError(f"items[{i}]: unexpected keys {sorted(unknown)}")
        first = trajectory if first is None else first
        prepared.append(_item(trajectory, kspace, known["weights"], known["times"]))
    units = _units(units, first) if prepared else "sdk"
    sens, sens_coils, field_map = _shared(matrix, sens, field_map)
    options = _options(options, lam=lam, iterations=iterations, method=method, backend=backend, units=units)
    results = []
    for i, (image, report, error, threads) in enumerate(
            _mri.reconstruct_batch(prepared, matrix, sens, sens_coils, field_map, int(jobs), bool(share_q),
                                   options)):
        if error is not None:
            error.item = i
            if errors == "raise":
                raise error
            results.append(error)
        else:
            report.update(units=units, threads=threads)
            results.append((image, report))
    return results


def _frame_items(name, frames):
    """Each frame as (trajectory, kspace[, weights]) or a dict as reconstruct_batch's items."""
    if isinstance(frames, (str, bytes)) or not hasattr(frames, "__iter__"):
        raise TypeError(f"{name}: expected a list of (trajectory, kspace[, weights]) tuples or dicts")
    prepared, first = [], None
    for i, entry in enumerate(frames):
        if isinstance(entry, dict):
            unknown = set(entry) - {"trajectory", "points", "kspace", "weights", "times"}
            if unknown:
                raise TypeError(f"{name}[{i}]: unexpected keys {sorted(unknown)}")
            trajectory = entry["trajectory"] if "trajectory" in entry else entry["points"]
            kspace, weights, times = entry["kspace"], entry.get("weights"), entry.get("times")
        elif isinstance(entry, (tuple, list)) and len(entry) in (2, 3):
            trajectory, kspace = entry[0], entry[1]
            weights = entry[2] if len(entry) == 3 else None
            times = None
        else:
            raise TypeError(f"{name}[{i}]: expected (trajectory, kspace[, weights]) or a dict")
        first = trajectory if first is None else first
        prepared.append(_item(trajectory, kspace, weights, times))
    if not prepared:
        raise ValueError(f"{name}: no frames")
    return prepared, first


def reconstruct_frames(frames, matrix, *, sens=None, lam=0.0, iterations=20, method="auto", backend="auto",
                       units="auto", field_map=None, **options):
    """mri::reconstruct_frames (mri/dynamic.hpp): the frames reconstructed jointly on one grid.
    frames: a list of (trajectory, kspace[, weights]) tuples (each as reconstruct takes them) or
    dicts as reconstruct_batch's items; mri.frames.split_frames returns them. Every option of
    reconstruct, with the terms over the stack of frames: "T:1024:0:LAM" (TV along the frames,
    axes=mri.FRAME_AXIS) and "L:7:7:LAM" (locally low rank, dict key "block"). Coil maps are
    estimated once from all frames. Returns (images, report): a list of (nx, ny[, nz]) complex64
    images in the frames' order (np.stack(images, axis=-1) gives `mri recon --bins`'s 4D layout)
    and one report for the series. units "auto": from the first frame's trajectory."""
    matrix = matrix_tuple(matrix)
    prepared, first = _frame_items("frames", frames)
    units = _units(units, first)
    sens, sens_coils, field_map = _shared(matrix, sens, field_map)
    options = _options(options, lam=lam, iterations=iterations, method=method, backend=backend, units=units)
    images, report = _mri.reconstruct_frames(prepared, matrix, sens, sens_coils, field_map, options)
    report["units"] = units
    return images, report


def reconstruct_motion_corrected(states, matrix, fields, *, jacobian_weighting=False, sens=None, lam=0.0,
                                 iterations=20, method="auto", backend="auto", units="auto", **options):
    """mri::reconstruct_motion_corrected (mri/mcir.hpp): one reference image from every motion
    state's data, min sum_s ||E_s W_s x - y_s||^2, W_s the warp of fields[s] (an (nx, ny[, nz], 3)
    displacement array as MotionEstimator returns, or None for a state in the reference's
    position). states: as reconstruct_frames' frames. Returns (image, report), report["motion"]
    the MotionCorrectionReport (states, reference_states, samples, warp/rhs/cg_warp seconds, note)."""
    matrix = matrix_tuple(matrix)
    prepared, first = _frame_items("states", states)
    if isinstance(fields, (str, bytes)) or not hasattr(fields, "__len__"):
        raise TypeError("fields: expected a list with one displacement array (or None) per state")
    if len(fields) != len(prepared):
        raise ValueError(f"fields: {len(fields)} fields for {len(prepared)} states")
    field_shape = image_shape(matrix) + (3,)
    fields = [None if f is None else real_array(f"fields[{i}]", f, field_shape) for i, f in enumerate(fields)]
    units = _units(units, first)
    sens, sens_coils, _ = _shared(matrix, sens, None)
    options = _options(options, lam=lam, iterations=iterations, method=method, backend=backend, units=units)
    image, report = _mri.reconstruct_motion_corrected(prepared, matrix, fields, bool(jacobian_weighting), sens,
                                                      sens_coils, options)
    report["units"] = units
    return image, report


def reconstruct_motion_chain(states, matrix, *, fields=None, rounds=1, refine_iterations=3, jacobian_weighting=False,
                             motion=None, sens=None, lam=0.0, iterations=20, method="auto", backend="auto",
                             units="auto", **options):
    """mri::reconstruct_motion_chain (mri/mcir.hpp, docs/dynamic.md "End to end"): the coil maps once
    from all the states, the states reconstructed jointly (as reconstruct_frames, with every term),
    each state registered to state 0 by the CLG estimator (unless `fields` are given: one
    (nx, ny[, nz], 3) array or None per state, as reconstruct_motion_corrected takes them), then
    MCIR of state 0 from all the data (with the options' spatial terms; terms across states, TV
    along the frames and locally low rank, are the states' only), and rounds - 1 alternations of
    registration and MCIR (refine_iterations CG iterations of each warped state on its own data).
    motion: the estimator's settings as a dict (alpha, gamma, rho, sigma, iterations, warps,
    levels, tolerance, backend; backend "auto": the states' backend). states and the other options
    as reconstruct_motion_corrected's. Returns a dict: "image" (state 0 from all the data), "report"
    (MCIR's: solver, iterations, objective ..., "motion" as reconstruct_motion_corrected's),
    "states" (the joint reconstruction's images) and "states_report", "fields" (the best round's,
    None for state 0), "rounds" (one dict per round that ran: field change, MCIR and data
    residuals, seconds, per-state motion reports), "best_round" (1-based), "maps" (the maps both
    reconstructions used, (nx, ny[, nz], coils), or None), "coils" (the coil step's report) and
    "note" (what the chain dropped or moved)."""
    matrix = matrix_tuple(matrix)
    prepared, first = _frame_items("states", states)
    if fields is not None:
        if isinstance(fields, (str, bytes)) or not hasattr(fields, "__len__"):
            raise TypeError("fields: expected None or a list with one displacement array (or None) per state")
        if len(fields) != len(prepared):
            raise ValueError(f"fields: {len(fields)} fields for {len(prepared)} states")
        field_shape = image_shape(matrix) + (3,)
        fields = [None if f is None else real_array(f"fields[{i}]", f, field_shape) for i, f in enumerate(fields)]
    if motion is not None and not isinstance(motion, dict):
        raise TypeError(f"motion: {type(motion).__name__}, expected a dict of the estimator's settings")
    for name, value in (("rounds", rounds), ("refine_iterations", refine_iterations)):
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(f"{name}: {value!r} ({type(value).__name__}) is not an integer")
    chain = {"rounds": int(rounds), "refine_iterations": int(refine_iterations),
             "jacobian_weighting": bool(jacobian_weighting), "fields": fields, "motion": dict(motion or {})}
    units = _units(units, first)
    sens, sens_coils, _ = _shared(matrix, sens, None)
    options = _options(options, lam=lam, iterations=iterations, method=method, backend=backend, units=units)
    result = _mri.reconstruct_motion_chain(prepared, matrix, sens, sens_coils, chain, options)
    result["report"]["units"] = units
    result["states_report"]["units"] = units
    return result


# SparseTerm axes value of total variation along the frames (mri::kFrameAxis; BART's T:1024).
FRAME_AXIS = 1024


def _units(units, trajectory):
    """reconstruct's units: "auto" is the mri tool's rule by input."""
    if units == "auto":
        return "sdk" if is_points(_asarray("trajectory", trajectory)) else "bart"
    return units


def _item(trajectory, kspace, weights, times):
    """(points, samples, weights, times, coils) of one item, as the extension takes them."""
    points = trajectory_points(trajectory)
    samples, coils = _kspace(kspace, points.shape[0])
    if weights is not None:
        weights = real_array("weights", weights).reshape(-1, order="F")
    if times is not None:
        times = real_array("times", times).reshape(-1, order="F")
    return points, samples, weights, times, coils


def _shared(matrix, sens, field_map):
    """The maps (and their coil count) and the field map every item shares."""
    sens_coils = 0
    if sens is not None:
        sens, sens_coils = with_coils("sens", sens, matrix)
    if field_map is not None:
        field_map = real_array("field_map", field_map, image_shape(matrix))
    return sens, sens_coils, field_map


def _options(options, **named):
    options.update(named)
    if options.get("seed") is not None:
        options["seed"] = seed_value(options["seed"])
    return options


def phantom(matrix, supersample=4):
    """The modified Shepp-Logan phantom (2D ellipses, 3D ellipsoids) rasterised on `matrix`."""
    return _mri.phantom_image(matrix_tuple(matrix), int(supersample))


def phantom_kspace(points, matrix, coils=0):
    """The phantom's closed-form k-space at `points` (no inverse crime): (M,) for coils=0, else
    (M, coils) seen by the simulated receive array of mri/coil_simulation.hpp."""
    return _mri.phantom_kspace(points_array("points", points), matrix_tuple(matrix), int(coils))


def simulated_maps(matrix, coils):
    """The simulated array's sensitivity maps (nx, ny[, nz], coils) (phantom_kspace's coils)."""
    return _mri.simulated_maps(matrix_tuple(matrix), int(coils))


def add_noise(samples, snr, seed=0):
    """A copy of samples with complex Gaussian noise: RMS signal / noise std = snr (linear)."""
    return _mri.add_noise(complex_array("samples", samples), float(snr), seed_value(seed))


def psnr(image, reference):
    """20 log10(max|ref| / RMS(image - ref)) (Stone et al.'s definition)."""
    reference = complex_array("reference", reference)
    shape = reference.shape
    matrix = shape if len(shape) == 3 else shape + (1,)
    return _mri.psnr(complex_array("image", image, shape), reference, matrix)


def estimate_sensitivities(trajectory, kspace, matrix, *, weights=None, method="direct",
                           calibration=0, mask_threshold=0.02, espirit_kernel=0,
                           espirit_threshold=0.02, espirit_crop=0.8):
    """Coil maps (nx, ny[, nz], coils) from the data (mri/coils.hpp): "direct" (BART caldir) or
    "espirit" (BART ecalib, one set)."""
    matrix = matrix_tuple(matrix)
    points = trajectory_points(trajectory)
    samples, coils = _kspace(kspace, points.shape[0])
    if weights is not None:
        weights = real_array("weights", weights).reshape(-1, order="F")
    return _mri.estimate_sensitivities(points, samples, weights, coils, matrix, method,
                                       int(calibration), float(mask_threshold), int(espirit_kernel),
                                       float(espirit_threshold), float(espirit_crop))


class MotionEstimator:
    """3D CLG optical flow with the volume-conserving term (mri/motion.hpp). estimate(fixed,
    moving) -> (nx, ny, nz, 3) displacements (u, v, w in voxels) with moving(x + w(x)) ~ fixed(x)."""

    def __init__(self, matrix, *, alpha=0.03, gamma=0.0, rho=1.0, sigma=0.5, iterations=30, warps=3,
                 levels=3, omega=1.5, solver="auto", tolerance=1e-3, memory="cached",
                 derivative="central", backend="cpu", precision="float32"):
        self.matrix = matrix_tuple(matrix)
        if len(self.matrix) != 3:
            raise ValueError(f"matrix: {self.matrix}: motion estimation is 3D (nx, ny, nz)")
        self._op = _mri.MotionEstimator(self.matrix, float(alpha), float(gamma), float(rho),
                                        float(sigma), int(iterations), int(warps), int(levels),
                                        float(omega), solver, float(tolerance), memory, derivative,
                                        backend, precision)

    def estimate(self, fixed, moving):
        return self._op.estimate(real_array("fixed", fixed, self.matrix),
                                 real_array("moving", moving, self.matrix))

    def estimate_sequence(self, frames):
        """frames (nx, ny, nz, T) -> list of T-1 fields, frame k to k+1."""
        frames = real_array("frames", frames)
        if frames.ndim != 4 or frames.shape[:3] != self.matrix:
            raise ValueError(f"frames: shape {frames.shape}, expected {self.matrix + ('frames',)}")
        return self._op.estimate_sequence(frames, frames.shape[3])

    @property
    def report(self):
        """The last call's per-stage times (MotionReport) as a dict."""
        return self._op.report


def synthetic_motion(matrix, motion="translation", amplitude=1.0, seed=0):
    """(fixed, moving, truth): a textured volume, the volume moved by a known field, the field."""
    return _mri.motion_synthetic(matrix_tuple(matrix), motion, float(amplitude), seed_value(seed))


from . import breathing, density, frames, io, traj  # noqa: E402  (submodules that use the names above)
