"""mri.reconstruct_frames, mri.frames (binning, splitting, self-gating), mri.ImageWarp and
mri.reconstruct_motion_corrected: the C++ APIs of mri/dynamic.hpp, frames.hpp and mcir.hpp."""

import numpy as np
import pytest

import mri
from conftest import random_image

MATRIX = (32, 32)
SPOKES, READOUT = 64, 64


@pytest.fixture(scope="module")
def acquisition():
    # A golden-angle radial acquisition, readout-major (spoke r = samples r*S .. r*S + S - 1).
    points = mri.traj.radial(MATRIX, SPOKES, READOUT, golden=True)
    kspace = mri.add_noise(mri.phantom_kspace(points, MATRIX, coils=2), snr=30, seed=7)
    return points, kspace


def test_one_frame_is_reconstruct_bitwise(acquisition):
    # reconstruct_frames without terms runs reconstruct() on each frame (mri/dynamic.hpp): one
    # frame must give reconstruct's image bit for bit, CG and FISTA with a wavelet term alike.
    points, kspace = acquisition
    for options in ({"lam": 0.01}, {"terms": ["W:3:0:0.001"], "solver": "fista"}):
        image, _ = mri.reconstruct(points, kspace, MATRIX, iterations=8, backend="cpu", **options)
        images, report = mri.reconstruct_frames([(points, kspace)], MATRIX, iterations=8, backend="cpu", **options)
        assert len(images) == 1 and images[0].shape == MATRIX and images[0].dtype == np.complex64
        assert np.array_equal(images[0], image)
        assert report["units"] == "sdk"


def test_temporal_tv_runs_by_admm(acquisition):
    points, kspace = acquisition
    frames = mri.frames.split_frames(points, kspace, READOUT, mri.frames.bin_by_time(SPOKES, 16))
    assert len(frames) == 4
    images, report = mri.reconstruct_frames(frames, MATRIX, iterations=5, backend="cpu",
                                            terms=["T:1024:0:0.01"])
    assert len(images) == 4 and all(i.shape == MATRIX for i in images)
    assert "admm" in report["solver"].lower()
    assert all(np.isfinite(i).all() and np.linalg.norm(i) > 0 for i in images)
    # The same term as a dict, axes = mri.FRAME_AXIS (BART's T:1024).
    _, report = mri.reconstruct_frames(frames, MATRIX, iterations=2, backend="cpu",
                                       terms=[{"penalty": "total-variation", "lam": 0.01, "axes": mri.FRAME_AXIS}])
    assert "admm" in report["solver"].lower()


def test_bins_have_equal_counts(rng):
    signal = rng.standard_normal(SPOKES * 2 + 3)
    binning = mri.frames.bin_by_amplitude(signal, 4, expiration="low")
    counts = binning["readouts_per_frame"]
    assert binning["method"] == "amplitude" and len(binning["frames"]) == 4
    assert counts.max() - counts.min() <= 1 and counts.sum() == signal.size
    assert np.array_equal(np.sort(np.concatenate(binning["frames"])), np.arange(signal.size))
    # bin 0 holds the lowest values (end-expiration at the low end, as asked)
    assert signal[binning["frames"][0]].max() <= signal[binning["frames"][1]].min()
    time = mri.frames.bin_by_time(SPOKES, 16, step=8)
    assert time["method"] == "time" and [list(f) for f in time["frames"]][1] == list(range(8, 24))


def test_split_frames_takes_each_frames_readouts(acquisition):
    points, kspace = acquisition
    binning = [np.arange(10, 20), np.arange(40, 50)]
    frames = mri.frames.split_frames(points, kspace, READOUT, binning)
    for (p, k, w), readouts in zip(frames, binning):
        rows = (readouts[:, None] * READOUT + np.arange(READOUT)).reshape(-1)
        assert w is None
        assert np.array_equal(p, points[rows]) and np.array_equal(k, kspace[rows])


def test_self_gating_signal_one_value_per_readout(acquisition):
    points, kspace = acquisition
    signal = mri.frames.self_gating_signal(points, kspace, READOUT, 0.1)
    assert signal["values"].shape == (SPOKES,) and np.isfinite(signal["values"]).all()
    assert signal["source"] == "self-gating" and isinstance(signal["breathing_peak_found"], bool)


def test_image_warp_is_adjoint(rng):
    # <W x, y> = <x, W^H y>, both sides in float64 by NumPy from the operator's complex64 outputs;
    # the tolerance 1e-5 (relative) covers float32 rounding of the 4-point interpolation sums.
    field = np.zeros(MATRIX + (3,), dtype=np.float32)
    field[..., :2] = 2.5 * rng.standard_normal(MATRIX + (2,))
    for jacobian in (False, True):
        warp = mri.ImageWarp(field, MATRIX, jacobian_weighting=jacobian)
        assert warp.shape == (32 * 32, 32 * 32) and warp.dtype == np.complex64 and not warp.is_identity
        x, y = random_image(rng, MATRIX), random_image(rng, MATRIX)
        lhs = np.vdot(warp.forward(x).astype(np.complex128), y.astype(np.complex128))
        rhs = np.vdot(x.astype(np.complex128), warp.adjoint(y).astype(np.complex128))
        assert abs(lhs - rhs) <= 1e-5 * abs(lhs)


def bilinear_warp_reference(x, u, v):
    """(W x)(i, j) = x(i + u, j + v) in float64: bilinear weights of the 4 neighbours, positions
    clamped to the volume (clamp-to-edge, mri/mcir.hpp)."""
    nx, ny = x.shape
    i, j = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
    px, py = np.clip(i + u.astype(np.float64), 0, nx - 1), np.clip(j + v.astype(np.float64), 0, ny - 1)
    x0, y0 = np.minimum(np.floor(px).astype(int), nx - 2), np.minimum(np.floor(py).astype(int), ny - 2)
    fx, fy = px - x0, py - y0
    x = x.astype(np.complex128)
    return ((1 - fx) * (1 - fy) * x[x0, y0] + fx * (1 - fy) * x[x0 + 1, y0]
            + (1 - fx) * fy * x[x0, y0 + 1] + fx * fy * x[x0 + 1, y0 + 1])


def test_image_warp_forward_is_bilinear_interpolation(rng):
    # The float64 reference above; 1e-5 relative to the image's largest value covers float32
    # positions and weights (a weight error ~ 1e-6 per term, 4 terms of |x| <= max).
    field = np.zeros(MATRIX + (3,), dtype=np.float32)
    field[..., :2] = 3.0 * rng.standard_normal(MATRIX + (2,))
    x = random_image(rng, MATRIX)
    expected = bilinear_warp_reference(x, field[..., 0], field[..., 1])
    got = mri.ImageWarp(field, MATRIX).forward(x)
    assert np.abs(got - expected).max() <= 1e-5 * np.abs(x).max()


def test_zero_field_warp_is_the_identity(rng):
    warp = mri.ImageWarp(np.zeros(MATRIX + (3,)), MATRIX)
    x = random_image(rng, MATRIX)
    assert warp.is_identity and np.array_equal(warp.forward(x), x)


def test_motion_corrected_with_reference_states(acquisition):
    points, kspace = acquisition
    states = mri.frames.split_frames(points, kspace, READOUT, mri.frames.bin_by_time(SPOKES, 32))
    image, report = mri.reconstruct_motion_corrected(states, MATRIX, [None, np.zeros(MATRIX + (3,))],
                                                     iterations=5, backend="cpu")
    assert image.shape == MATRIX and np.linalg.norm(image) > 0
    assert report["motion"]["states"] == 2 and report["motion"]["reference_states"] == 2


def test_bad_inputs_name_the_argument(acquisition):
    points, kspace = acquisition
    with pytest.raises(ValueError, match="frames"):
        mri.reconstruct_frames([], MATRIX)
    with pytest.raises(TypeError, match="frames"):
        mri.reconstruct_frames(points, MATRIX)
    with pytest.raises(TypeError, match="frames\\[0\\]"):
        mri.reconstruct_frames([(points,)], MATRIX)
    with pytest.raises(ValueError, match="readouts_per_frame"):
        mri.frames.bin_by_time(SPOKES, 4)
    with pytest.raises(TypeError, match="readouts_per_frame"):
        mri.frames.bin_by_time(SPOKES, 16.0)
    with pytest.raises(ValueError, match="bins"):
        mri.frames.bin_by_amplitude(np.arange(SPOKES, dtype=float), 100)
    with pytest.raises(ValueError, match="expiration"):
        mri.frames.bin_by_amplitude(np.arange(SPOKES, dtype=float), 2, expiration="up")
    with pytest.raises(ValueError, match="samples_per_readout"):
        mri.frames.split_frames(points, kspace, READOUT - 1, [np.arange(10)])
    with pytest.raises(ValueError, match="field"):
        mri.ImageWarp(np.zeros(MATRIX + (2,)), MATRIX)
    with pytest.raises(TypeError, match="field"):
        mri.ImageWarp(np.zeros(MATRIX + (3,), dtype=np.complex64), MATRIX)
    with pytest.raises(ValueError, match="fields"):
        mri.reconstruct_motion_corrected([(points, kspace)], MATRIX, [None, None])


@pytest.fixture(scope="module")
def breathing():
    # The C++ test's acquisition (tests/dynamic/test_breathing.cpp): 2D golden-angle radial, 2000
    # spokes of 8 samples, 4 coils, SNR 30, period 4 s at TR 10 ms (20 s), amplitude 2 voxels.
    points = mri.traj.radial(MATRIX, 2000, 8, golden=True)
    acq = mri.breathing.simulate(points, MATRIX, 8, coils=4, snr=30, noise_seed=3, amplitude_voxels=2,
                                 readout_seconds=0.01, seed=5)
    return points, acq


def test_self_gating_finds_the_simulated_breathing(breathing):
    points, acq = breathing
    assert acq["kspace"].shape == (points.shape[0], 4) and acq["trace"].shape == (2000,)
    signal = mri.frames.self_gating_signal(points, acq["kspace"], acq["samples_per_readout"],
                                           acq["readout_seconds"])
    assert signal["breathing_peak_found"], signal["note"]
    assert abs(signal["peak_hz"] - 0.25) < 0.08  # period 4 s, cycles irregular by 10%
    # The C++ test's bound (correlation with the true trace above 0.9; the reasons it is below 1
    # are in tests/dynamic/test_breathing.cpp).
    assert np.corrcoef(signal["values"], acq["trace"])[0, 1] > 0.9
    binning = mri.frames.bin_by_amplitude(signal["values"], 4)
    means = [acq["trace"][f].mean() for f in binning["frames"]]
    assert all(a < b for a, b in zip(means, means[1:]))  # bin 0 is end-expiration


def test_breathing_displacement_is_the_si_shift():
    # 2D: y is superior-inferior, shifted by amplitude * (moving - fixed) voxels everywhere.
    field = mri.breathing.displacement(MATRIX, 0.2, 1.1, amplitude_voxels=2)
    assert field.shape == MATRIX + (3,) and field.dtype == np.float32
    assert np.allclose(field[..., 1], 2 * 0.9, rtol=1e-6)


def test_weighted_frames_and_locally_low_rank(acquisition):
    points, kspace = acquisition
    # A frame's third element is its density weights: one weighted frame = reconstruct bitwise.
    weights = mri.density.radial(points, MATRIX, SPOKES)
    image, _ = mri.reconstruct(points, kspace, MATRIX, weights=weights, iterations=5, backend="cpu")
    images, _ = mri.reconstruct_frames([(points, kspace, weights)], MATRIX, iterations=5, backend="cpu")
    assert np.array_equal(images[0], image)
    # Locally low rank over the frames (BART's L:7:7 in 3D; on a 2D grid axes 3 = x, y), a term
    # reconstruct does not take.
    frames = mri.frames.split_frames(points, kspace, READOUT, mri.frames.bin_by_time(SPOKES, 16))
    images, report = mri.reconstruct_frames(frames, MATRIX, iterations=3, backend="cpu", terms=["L:3:3:0.01"])
    assert len(images) == 4 and all(np.isfinite(i).all() for i in images)


def test_plan_frames_is_the_cli_binning_and_join_frames_undoes_the_split(acquisition, rng, tmp_path):
    points, kspace = acquisition
    # Time frames: as bin_by_time.
    plan = mri.frames.plan_frames(points, kspace, READOUT, frames_readouts=16, frames_step=8)
    assert [list(f) for f in plan["frames"]] == [list(f) for f in mri.frames.bin_by_time(SPOKES, 16, 8)["frames"]]
    # Amplitude bins of a given signal (header / file) equal bin_by_amplitude of the same values.
    signal = rng.standard_normal(SPOKES)
    by_header = mri.frames.plan_frames(points, kspace, READOUT, bins=4, gating="header", header_signal=signal,
                                       expiration="low")
    direct = mri.frames.bin_by_amplitude(signal, 4, expiration="low")
    assert [list(f) for f in by_header["frames"]] == [list(f) for f in direct["frames"]]
    path = tmp_path / "signal.txt"
    path.write_text("# one value per readout\n" + "\n".join(repr(v) for v in signal) + "\n")
    read = mri.frames.read_gating_signal(path, SPOKES)
    np.testing.assert_array_equal(read["values"], signal)
    by_file = mri.frames.plan_frames(points, kspace, READOUT, bins=4, gating=path, expiration="low")
    assert [list(f) for f in by_file["frames"]] == [list(f) for f in direct["frames"]]
    # Bad requests name the argument.
    with pytest.raises(ValueError, match="bins"):
        mri.frames.plan_frames(points, kspace, READOUT)
    with pytest.raises(ValueError, match="header_signal"):
        mri.frames.plan_frames(points, kspace, READOUT, bins=4, gating="header")
    with pytest.raises(ValueError, match="signal"):
        mri.frames.read_gating_signal(path, SPOKES + 1)
    # join_frames(split_frames(all readouts in order)) is the acquisition itself.
    frames = mri.frames.split_frames(points, kspace, READOUT, mri.frames.bin_by_time(SPOKES, 16))
    joined_points, joined_kspace, weights = mri.frames.join_frames(frames)
    assert weights is None
    np.testing.assert_array_equal(joined_points[:, :2], points)
    np.testing.assert_array_equal(joined_kspace, kspace)
    with pytest.raises(ValueError, match="frames: empty"):
        mri.frames.join_frames([])
