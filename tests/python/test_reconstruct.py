"""mri.reconstruct against the C++ command-line tool on the same BART files, its options and
report, and the other functions of the API (coil maps, density, phantom, motion)."""

import subprocess

import numpy as np
import pytest

import mri
from conftest import cli_env, mri_tool

CLI = mri_tool()


@pytest.fixture(scope="module")
def radial_data():
    matrix = (32, 32)
    points = mri.traj.radial(matrix, 24, 64)
    kspace = mri.add_noise(mri.phantom_kspace(points, matrix), snr=30, seed=4)
    return matrix, points, kspace


@pytest.mark.skipif(not CLI, reason="the mri tool is not built (MRI_TEST_CLI)")
def test_reconstruct_on_bart_files_is_mri_recon(tmp_path, radial_data):
    # The acceptance: the CLI's image on the same BART files (relative difference below
    # 1e-5); both run reconstruct() on the CPU with the same options, so the bits agree too.
    matrix, points, kspace = radial_data
    mri.io.write_cfl(tmp_path / "t", mri.io.to_bart_trajectory(points, lines=24))
    mri.io.write_cfl(tmp_path / "k", kspace.reshape(1, 64, 24, order="F"))
    subprocess.run([CLI, "recon", "--traj", str(tmp_path / "t"), "--kspace", str(tmp_path / "k"),
                    "--matrix", "32,32", "--lambda", "0.01", "--iterations", "10", "--backend", "cpu",
                    "--quiet", "--out", str(tmp_path / "x")], check=True, capture_output=True, env=cli_env())
    cli = mri.io.read_cfl(tmp_path / "x")
    traj, ksp = mri.io.read_cfl(tmp_path / "t"), mri.io.read_cfl(tmp_path / "k")
    # The call: BART arrays in, so BART's units (lam, image scale) as the tool uses.
    image, report = mri.reconstruct(traj, ksp, matrix=matrix, lam=0.01, iterations=10,
                                    method="nufft", backend="cpu")
    assert report["units"] == "bart"
    assert image.shape == cli.shape == matrix
    assert np.linalg.norm(image - cli) / np.linalg.norm(cli) < 1e-5
    np.testing.assert_array_equal(image, cli)
    assert report["backend"] == "cpu" and report["iterations"] == 10


def test_units_bart_is_the_sdks_units_rescaled(radial_data):
    # lam_bart = lam_sdk / N and image_bart = sqrt(N) image_sdk (BART's unitary F).
    matrix, points, kspace = radial_data
    n = matrix[0] * matrix[1]
    sdk, report = mri.reconstruct(points, kspace, matrix, lam=0.01 * n, iterations=5, backend="cpu")
    assert report["units"] == "sdk"  # (M, d) points: the SDK's units
    bart, _ = mri.reconstruct(points, kspace, matrix, lam=0.01, iterations=5, backend="cpu", units="bart")
    traj = mri.io.to_bart_trajectory(points, lines=24)
    auto, report = mri.reconstruct(traj, kspace, matrix, lam=0.01, iterations=5, backend="cpu")
    assert report["units"] == "bart"
    np.testing.assert_array_equal(auto, bart)
    scale = np.float32(1 / mri._mri.bart_nufft_scale(matrix))
    np.testing.assert_allclose(bart, sdk * scale, rtol=0, atol=1e-6 * np.abs(bart).max())


def test_report_is_a_dict_of_every_field(radial_data):
    matrix, points, kspace = radial_data
    seen = []
    image, report = mri.reconstruct(points, kspace, matrix, iterations=4, method="exact",
                                    backend="cpu", normal="direct",
                                    on_iteration=lambda k, x, r: seen.append((k, x.shape, r)))
    assert report["method"] == "exact" and report["normal"] == "direct"
    assert report["solver"] == "cg" and report["status"] in ("max-iterations", "converged")
    assert len(report["residuals"]) == report["iterations"] + 1
    assert [k for k, _, _ in seen] == list(range(1, report["iterations"] + 1))
    assert all(shape == matrix for _, shape, _ in seen)
    for key in ("setup_seconds", "fhd_seconds", "q_seconds", "cg_seconds", "total_seconds",
                "backend_note", "method_note", "maps", "q_cache", "device_seconds"):
        assert key in report


def test_sparse_terms_by_bart_spec_and_dict(radial_data):
    matrix, points, kspace = radial_data
    _, w = mri.reconstruct(points, kspace, matrix, iterations=5, backend="cpu", terms=["W:3:0:0.001"])
    assert w["solver"] == "fista" and len(w["objective"]) == w["iterations"] + 1
    _, t = mri.reconstruct(points, kspace, matrix, iterations=5, backend="cpu",
                           terms=[{"penalty": "total-variation", "lam": 0.01}], solver="primal-dual")
    assert t["solver"] == "primal-dual" and t["lipschitz"] > 0


def test_lipschitz_estimate_cached_beside_q(radial_data, tmp_path):
    # With q_cache_dir the power iteration's L is kept beside Q (mri/toeplitz_cache.hpp): the
    # second solve reads it and repeats the first bit for bit.
    matrix, points, kspace = radial_data
    options = dict(iterations=5, backend="cpu", normal="toeplitz", terms=["W:3:0:0.001"], q_cache_dir=str(tmp_path))
    first, r1 = mri.reconstruct(points, kspace, matrix, **options)
    second, r2 = mri.reconstruct(points, kspace, matrix, **options)
    assert not r1["lipschitz_cached"] and r2["lipschitz_cached"]
    assert r2["lipschitz"] == r1["lipschitz"] and np.array_equal(first, second)


def test_bad_options_name_themselves(radial_data):
    matrix, points, kspace = radial_data
    with pytest.raises(TypeError, match="unexpected keyword argument 'itterations'"):
        mri.reconstruct(points, kspace, matrix, itterations=5)
    with pytest.raises(ValueError, match="normal = 'fast'"):
        mri.reconstruct(points, kspace, matrix, normal="fast")
    with pytest.raises(mri.InvalidArgument):
        mri.reconstruct(points, kspace, matrix, lam=-1.0, backend="cpu")
    with pytest.raises(ValueError, match="^kspace: 1535 values"):
        mri.reconstruct(points, kspace[:-1], matrix)


def test_multi_coil_sense_with_given_and_estimated_maps():
    matrix = (32, 32)
    points = mri.traj.radial(matrix, 32, 64)
    kspace = mri.phantom_kspace(points, matrix, coils=4)
    assert kspace.shape == (points.shape[0], 4)
    maps = mri.simulated_maps(matrix, 4)
    truth = mri.phantom(matrix)
    given, report = mri.reconstruct(points, kspace, matrix, sens=maps, iterations=15, backend="cpu")
    assert report["maps"] == "given" and report["coils"] == 4
    assert mri.psnr(given, truth) > 25
    estimated = mri.estimate_sensitivities(points, kspace, matrix)
    assert estimated.shape == matrix + (4,)
    _, report = mri.reconstruct(points, kspace, matrix, sens=estimated, iterations=5, backend="cpu")
    assert report["maps"] == "given"


def test_density_weights():
    matrix = (32, 32)
    points = mri.traj.radial(matrix, 24, 64)
    ramp = mri.density.radial(points, matrix, 24)
    weights, residuals = mri.density.pipe_menon(points, matrix, iterations=10)
    assert ramp.shape == weights.shape == (points.shape[0],) and ramp.dtype == np.float32
    assert residuals[-1] < residuals[0]
    # Pipe-Menon follows the analytic ramp on radial data (tests/nufft/test_density.cpp compares
    # them closely at convergence); after 10 iterations on this 32^2 case the correlation is 0.86.
    assert np.corrcoef(ramp, weights)[0, 1] > 0.8


def test_trajectory_generators_stay_in_the_nyquist_box():
    for points, matrix in [(mri.traj.cartesian((8, 6)), (8, 6)), (mri.traj.spiral((32, 32), 4, 256), (32, 32)),
                           (mri.traj.propeller((32, 32), 6, 8, 32), (32, 32)),
                           (mri.traj.stack_of_stars((16, 16, 4), 8, 32), (16, 16, 4)),
                           (mri.traj.uniform_random((16, 16), 100, 3), (16, 16))]:
        half = np.asarray(matrix, dtype=np.float32) / 2
        assert points.shape[1] == len(matrix)
        assert np.all(points >= -half) and np.all(points < half)


def test_motion_estimator_finds_a_translation():
    fixed, moving, truth = mri.synthetic_motion((24, 24, 24), "translation", amplitude=1.0, seed=2)
    estimator = mri.MotionEstimator((24, 24, 24), levels=2, warps=2, iterations=20)
    field = estimator.estimate(fixed, moving)
    assert field.shape == (24, 24, 24, 3)
    inner = (slice(4, -4),) * 3
    error = np.linalg.norm(field[inner] - truth[inner], axis=-1).mean()
    assert error < 0.25  # of a 1.2-voxel motion
    report = estimator.report
    assert report["total_ms"] > 0
    # The multigrid's safeguards, reported as in C++ (mri/motion.hpp): nothing to do on this input.
    assert report["solver_nonfinite"] == 0 and report["solver_switches"] >= 0
    assert 0 <= report["solver_residual"] < 1e-2
    fields = estimator.estimate_sequence(np.stack([fixed, moving, fixed], axis=-1))
    assert len(fields) == 2


def test_option_values_of_the_wrong_type_name_the_option(radial_data):
    matrix, points, kspace = radial_data
    with pytest.raises(TypeError, match=r"^tolerance: 'x' \(str\) is not a valid value"):
        mri.reconstruct(points, kspace, matrix, tolerance="x")
    with pytest.raises(TypeError, match="^terms: unexpected key 'lamda'"):
        mri.reconstruct(points, kspace, matrix, terms=[{"penalty": "l1-image", "lamda": 1}])
    with pytest.raises(ValueError, match=r"^seed = -1"):
        mri.reconstruct(points, kspace, matrix, seed=-1)
    with pytest.raises(TypeError, match="^matrix"):
        mri.reconstruct(points, kspace, "ab")


def test_a_python_exception_in_a_callback_propagates(radial_data):
    matrix, points, kspace = radial_data
    with pytest.raises(ZeroDivisionError):
        mri.reconstruct(points, kspace, matrix, backend="cpu", on_iteration=lambda k, x, r: 1 / 0)


def test_reconstruct_batch_is_reconstruct_per_item(radial_data):
    matrix, points, kspace = radial_data
    items = [{"points": points, "kspace": mri.add_noise(kspace, snr=20, seed=s)} for s in range(3)]
    results = mri.reconstruct_batch(items, matrix, jobs=2, iterations=6, backend="cpu")
    assert len(results) == 3
    assert [r["q_cache"] for _, r in results].count("miss") == 1  # one Q for the shared trajectory
    for item, (image, report) in zip(items, results):
        single, _ = mri.reconstruct(item["points"], item["kspace"], matrix, iterations=6, backend="cpu")
        assert report["threads"] >= 1 and report["units"] == "sdk"
        # NUFFT reconstructions are measured bitwise across thread counts (docs/reliability.md);
        # the test allows the documented cross-count tolerance.
        assert np.linalg.norm(image - single) <= 1e-5 * np.linalg.norm(single)


def test_reconstruct_batch_keeps_each_items_error(radial_data):
    matrix, points, kspace = radial_data
    beyond = points * 4  # beyond 3n/2: reconstruct refuses the item, the others run
    items = [(points, kspace), (beyond, kspace), (points, kspace)]
    results = mri.reconstruct_batch(items, matrix, iterations=3, backend="cpu", errors="return")
    assert isinstance(results[1], mri.InvalidArgument) and results[1].item == 1
    assert "beyond 3n/2" in str(results[1])
    assert results[0][0].shape == results[2][0].shape == matrix
    with pytest.raises(mri.InvalidArgument) as error:
        mri.reconstruct_batch(items, matrix, iterations=3, backend="cpu")
    assert error.value.item == 1


def test_3d_reconstruction_of_the_3d_phantom():
    matrix = (16, 16, 12)
    points = mri.traj.koosh(matrix, 600, 32)
    kspace = mri.phantom_kspace(points, matrix)
    weights = mri.density.pipe_menon(points, matrix, iterations=10)[0]
    image, report = mri.reconstruct(points, kspace, matrix, weights=weights, iterations=10, backend="cpu")
    assert image.shape == matrix and report["method"] == "nufft"
    plain = mri.NufftOperator(points, matrix).adjoint(kspace * weights)
    truth = mri.phantom(matrix)
    # CG beats the density-compensated adjoint (the gridding baseline) on the same data: 25.5 dB
    # against 19.5 dB (best-scaled) here.
    scale = np.vdot(plain, truth) / np.vdot(plain, plain)
    assert mri.psnr(image, truth) > mri.psnr(plain * scale, truth)
