"""Arrays in and out (the conversion rule of python/mri/_arrays.py) and BART files in NumPy
layout, read back by the C++ command-line tool."""

import subprocess

import numpy as np
import pytest

import mri
from conftest import random_image, cli_env, mri_tool

CLI = mri_tool()


def test_cfl_round_trip_keeps_values_and_bart_axis_order(tmp_path, rng):
    a = random_image(rng, (5, 4, 3))
    mri.io.write_cfl(tmp_path / "a", a)
    header = (tmp_path / "a.hdr").read_text().split("\n")
    assert header[1].split()[:3] == ["5", "4", "3"]  # axis 0 is BART's first (fastest) dimension
    raw = np.fromfile(tmp_path / "a.cfl", dtype=np.complex64)
    np.testing.assert_array_equal(raw, a.reshape(-1, order="F"))  # x fastest in the file
    b = mri.io.read_cfl(tmp_path / "a")
    assert b.shape == (5, 4, 3) and b.dtype == np.complex64
    np.testing.assert_array_equal(a, b)


def test_read_cfl_drops_trailing_ones_as_bart_python_does(tmp_path, rng):
    a = random_image(rng, (1, 6, 2))
    mri.io.write_cfl(tmp_path / "k.cfl", a.reshape(1, 6, 2, 1, 1))
    assert mri.io.read_cfl(tmp_path / "k.hdr").shape == (1, 6, 2)


def test_missing_cfl_is_an_io_error_with_the_sdks_message(tmp_path):
    with pytest.raises(mri.IoError) as error:
        mri.io.read_cfl(tmp_path / "missing")
    assert isinstance(error.value, RuntimeError) and "missing" in str(error.value)


def test_bart_trajectory_maps_to_points_sample_fastest(rng):
    points = rng.uniform(-16, 16, (12, 2)).astype(np.float32)
    traj = mri.io.to_bart_trajectory(points, lines=3)
    assert traj.shape == (3, 4, 3) and traj.dtype == np.complex64
    np.testing.assert_array_equal(mri.io.bart_points(traj)[:, :2], points)
    np.testing.assert_array_equal(mri.io.bart_points(traj)[:, 2], 0)


@pytest.mark.parametrize("dtype", [np.complex128, np.float64, np.float32, np.int16, np.float16])
def test_numeric_dtypes_are_converted_once_to_complex64(dtype, rng):
    points = mri.traj.radial((16, 16), 8, 32)
    op = mri.NufftOperator(points, (16, 16))
    x = random_image(rng, (16, 16))
    x = (x.real * 8).astype(dtype) if np.dtype(dtype).kind != "c" else x.astype(dtype)
    expected = op.forward(np.asarray(x, dtype=np.complex64, order="F"))
    np.testing.assert_array_equal(op.forward(x), expected)


@pytest.mark.parametrize("bad", [np.zeros((16, 16), dtype=bool), np.full((16, 16), "a"),
                                 np.empty((16, 16), dtype=object)])
def test_non_numeric_dtypes_are_a_type_error_naming_the_argument(bad):
    op = mri.NufftOperator(mri.traj.radial((16, 16), 8, 32), (16, 16))
    with pytest.raises(TypeError, match="^x: dtype"):
        op.forward(bad)
    with pytest.raises(TypeError, match="^points: complex dtype"):
        mri.NufftOperator(np.zeros((4, 2), dtype=np.complex64), (16, 16))


def test_wrong_shapes_are_value_errors_naming_the_argument(rng):
    op = mri.NufftOperator(mri.traj.radial((16, 16), 8, 32), (16, 16))
    with pytest.raises(ValueError, match=r"^x: shape \(16, 8\), expected \(16, 16\)"):
        op.forward(random_image(rng, (16, 8)))
    with pytest.raises(ValueError, match=r"^y: shape"):
        op.adjoint(random_image(rng, (255,)))
    with pytest.raises(ValueError, match=r"^points: shape"):
        mri.NufftOperator(np.zeros((4, 4), dtype=np.float32), (16, 16))
    with pytest.raises(ValueError, match="^matrix"):
        mri.NufftOperator(mri.traj.radial((16, 16), 8, 32), (16,))


def test_non_contiguous_and_read_only_inputs_are_read_correctly(rng):
    op = mri.NufftOperator(mri.traj.radial((16, 16), 8, 32), (16, 16))
    big = random_image(rng, (32, 32))
    view = big[::2, ::2]  # strided
    frozen = np.array(view, order="C")
    frozen.setflags(write=False)
    expected = op.forward(np.asfortranarray(view))
    np.testing.assert_array_equal(op.forward(view), expected)
    np.testing.assert_array_equal(op.forward(frozen), expected)


def test_outputs_are_fortran_ordered_views_owning_their_data(rng):
    op = mri.NufftOperator(mri.traj.radial((16, 16), 8, 32), (16, 16))
    image = op.adjoint(random_image(rng, (256,)))
    assert image.flags.f_contiguous and image.flags.writeable and image.base is not None


def test_cuda_arrays_are_refused_with_a_type_error():
    class FakeCudaArray:
        __cuda_array_interface__ = {"shape": (16, 16), "typestr": "<c8", "data": (0, False), "version": 3}

    points = mri.traj.radial((16, 16), 8, 32)
    # Operators with device entry points take CUDA arrays only when made with backend="cuda".
    with pytest.raises(ValueError, match="^x: a CUDA array, but this NufftOperator runs on the cpu backend"):
        mri.NufftOperator(points, (16, 16)).forward(FakeCudaArray())
    # The rest of the API takes host arrays.
    with pytest.raises(TypeError, match="^x: a CUDA array; SenseOperator takes host arrays"):
        mri.SenseOperator(points, (16, 16), np.ones((16, 16, 1))).forward(FakeCudaArray())
    with pytest.raises(TypeError, match="^kspace: a CUDA array; this function takes host arrays"):
        mri.reconstruct(points, FakeCudaArray(), (16, 16))


def test_nan_trajectory_is_a_value_error_from_the_sdk():
    points = mri.traj.radial((16, 16), 8, 32)
    points[5, 1] = np.nan
    with pytest.raises(mri.InvalidArgument) as error:
        mri.NufftOperator(points, (16, 16))
    assert isinstance(error.value, ValueError) and isinstance(error.value, mri.Error)


def bart_scaled(values, scale):
    """values times BART's float scale part by part, as the CLI's cfloat *= float does."""
    out = np.array(values, dtype=np.complex64, order="F")
    out.real *= scale
    out.imag *= scale
    return out


@pytest.mark.skipif(not CLI, reason="the mri tool is not built (MRI_TEST_CLI)")
@pytest.mark.parametrize("exact", [False, True])
def test_bart_files_written_from_python_give_the_clis_nufft_bitwise(tmp_path, rng, exact):
    # `mri nufft` reads our files with the C++ reader and runs NufftOperator (tolerance 1e-3) or
    # the exact FourierOperator on the CPU, times BART's scale 1/sqrt(N): the same bits as
    # Python's operators, forward and adjoint.
    matrix = (24, 20)
    points = mri.traj.radial(matrix, 10, 48)
    y = random_image(rng, (points.shape[0],))
    x = random_image(rng, matrix)
    mri.io.write_cfl(tmp_path / "t", mri.io.to_bart_trajectory(points, lines=10))
    mri.io.write_cfl(tmp_path / "k", y.reshape(1, 48, 10, order="F"))
    mri.io.write_cfl(tmp_path / "x", x)
    flags = ["--exact"] if exact else []
    run = [CLI, "nufft", "--traj", str(tmp_path / "t")] + flags
    subprocess.run(run + ["--adjoint", "--matrix", "24,20", str(tmp_path / "k"), str(tmp_path / "adj")],
                   check=True, capture_output=True, env=cli_env())
    subprocess.run(run + [str(tmp_path / "x"), str(tmp_path / "fwd")], check=True, capture_output=True,
                   env=cli_env())
    op = mri.ExactOperator(points, matrix) if exact else mri.NufftOperator(points, matrix)
    scale = np.float32(mri._mri.bart_nufft_scale(matrix))
    adjoint = mri.io.read_cfl(tmp_path / "adj")
    assert adjoint.shape == matrix
    np.testing.assert_array_equal(adjoint, bart_scaled(op.adjoint(y), scale))
    forward = mri.io.read_cfl(tmp_path / "fwd")
    assert forward.shape == (1, 48, 10)
    np.testing.assert_array_equal(forward.reshape(-1, order="F"), bart_scaled(op.forward(x), scale))


def test_nifti_round_trip_through_libmri_io(tmp_path, rng):
    image = random_image(rng, (6, 5, 4))
    mri.io.write_nifti(tmp_path / "x.nii.gz", image, voxel_mm=(1.0, 1.5, 2.0), complex=True)
    volume = mri.io.read_nifti(tmp_path / "x.nii.gz")
    assert volume["data"].shape == (6, 5, 4, 1) and volume["values"] == "complex"
    np.testing.assert_array_equal(volume["data"][..., 0], image)
    assert volume["voxel_mm"] == [1.0, 1.5, 2.0]
    mri.io.write_nifti(tmp_path / "m.nii", image)
    # float32 magnitudes: the SDK's std::abs and NumPy's may differ in the last bit (2.4e-7 relative).
    np.testing.assert_allclose(mri.io.read_nifti(tmp_path / "m.nii")["data"][..., 0], np.abs(image), rtol=3e-7)
    with pytest.raises(mri.IoError, match="no such file"):
        mri.io.read_nifti(tmp_path / "missing.nii")


@pytest.mark.skipif(not CLI, reason="the mri tool is not built (MRI_TEST_CLI)")
def test_ismrmrd_items_reconstruct_as_mri_recon_does(tmp_path):
    # `mri phantom` writes a 4-coil radial ISMRMRD file; its item, read by libmri_io from Python
    # and reconstructed with estimated maps, is the image `mri recon --in` writes (our units).
    subprocess.run([CLI, "phantom", "--matrix", "32,32", "--traj", "radial", "--spokes", "32", "--readout", "64",
                    "--snr", "40", "--coils", "4", "--out", str(tmp_path / "raw.h5")],
                   check=True, capture_output=True, env=cli_env())
    subprocess.run([CLI, "recon", "--in", str(tmp_path / "raw.h5"), "--iterations", "8", "--backend", "cpu",
                    "--quiet", "--out", str(tmp_path / "x.cfl")], check=True, capture_output=True,
                   env=cli_env())
    raw = mri.io.read_ismrmrd(tmp_path / "raw.h5")
    assert raw["header"]["coils"] == 4 and len(raw["items"]) == 1
    item = raw["items"][0]
    assert item["points"].shape == (32 * 64, 2) and item["kspace"].shape == (32 * 64, 4)
    image, report = mri.reconstruct(item["points"], item["kspace"], tuple(raw["header"]["recon_matrix"][:2]),
                                    weights=item["weights"], iterations=8, backend="cpu")
    assert report["maps"].startswith("estimated")
    np.testing.assert_array_equal(image, mri.io.read_cfl(tmp_path / "x"))


def test_ismrmrd_written_from_python_reads_back_bitwise(tmp_path, rng):
    matrix = (32, 32)
    points = mri.traj.radial(matrix, 16, 64)
    slices = [{"points": points, "kspace": random_image(rng, (points.shape[0], 3)),
               "geometry": {"read_dir": [1, 0, 0], "phase_dir": [0, 1, 0], "slice_dir": [0, 0, 1],
                            "position": [0, 0, 5.0 * s]}} for s in range(2)]
    mri.io.write_ismrmrd(tmp_path / "raw.h5", slices, matrix, trajectory="radial", readouts=16)
    raw = mri.io.read_ismrmrd(tmp_path / "raw.h5")
    assert raw["header"]["coils"] == 3 and raw["header"]["trajectory"] == "radial"
    assert [item["slice"] for item in raw["items"]] == [0, 1]
    for written, item in zip(slices, raw["items"]):
        np.testing.assert_array_equal(item["points"], points)
        np.testing.assert_array_equal(item["kspace"], written["kspace"])
        assert item["geometry"]["position"] == written["geometry"]["position"]
    with pytest.raises(ValueError, match="units = 'furlongs'"):
        mri.io.read_ismrmrd(tmp_path / "raw.h5", units="furlongs")
