"""mri.reconstruct_motion_chain (mri/mcir.hpp): the chain from Python on a tiny free-breathing
koosh (16^3, 3 states, CPU), checked against the SDK's own parts on the same input: its MCIR is
mri.reconstruct_motion_corrected with the chain's fields and maps, its states mri.reconstruct_frames
with the chain's maps, and fields given back reproduce the image."""

import numpy as np
import pytest

import mri

MATRIX = (16, 16, 16)
SPOKES, READOUT, TR = 480, 16, 0.02


@pytest.fixture(scope="module")
def states():
    points = mri.traj.koosh(MATRIX, SPOKES, READOUT)
    sim = mri.breathing.simulate(points, MATRIX, READOUT, coils=2, snr=30, readout_seconds=TR, amplitude_voxels=2.0)
    binning = mri.frames.bin_by_amplitude(sim["trace"], 3, expiration="low")
    return mri.frames.split_frames(points, sim["kspace"], READOUT, binning, readout_seconds=TR)


def relative_error(a, b):
    a, b = np.asarray(a, dtype=np.complex128), np.asarray(b, dtype=np.complex128)
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def test_chain_is_its_parts(states):
    # The chain makes the coil maps once and hands them to both reconstructions (mri/mcir.hpp), so
    # with its maps and fields the public functions repeat its images; the CPU's solves are
    # deterministic, so they agree to float rounding (1e-5 leaves room for none beyond it).
    options = dict(iterations=5, backend="cpu", method="nufft")
    chain = mri.reconstruct_motion_chain(states, MATRIX, **options)
    image, report = chain["image"], chain["report"]
    assert image.shape == MATRIX and image.dtype == np.complex64 and np.linalg.norm(image) > 0
    assert report["solver"] == "cg" and report["iterations"] == 5 and report["motion"]["states"] == 3
    assert len(chain["states"]) == 3 and chain["best_round"] == 1 and len(chain["rounds"]) == 1
    assert chain["fields"][0] is None and all(f.shape == MATRIX + (3,) for f in chain["fields"][1:])
    assert len(chain["rounds"][0]["motion"]) == 2 and not chain["rounds"][0]["fields_given"]
    assert chain["maps"].shape == MATRIX + (2,) and chain["coils"]["maps"].startswith("estimated")

    mcir, _ = mri.reconstruct_motion_corrected(states, MATRIX, chain["fields"], sens=chain["maps"], **options)
    assert relative_error(mcir, image) < 1e-5
    frames, _ = mri.reconstruct_frames(states, MATRIX, sens=chain["maps"], **options)
    assert all(relative_error(f, s) < 1e-5 for f, s in zip(frames, chain["states"]))

    # The fields given back: round 1 skips the registration and solves the same MCIR.
    again = mri.reconstruct_motion_chain(states, MATRIX, fields=chain["fields"], **options)
    assert again["rounds"][0]["fields_given"] and again["rounds"][0]["motion"] == []
    assert relative_error(again["image"], image) < 1e-5


def test_chain_with_sparse_terms(states):
    # A spatial term goes to the states and to MCIR (the proximal solver on MCIR's normal); TV along
    # the frames only to the states, and the note says so.
    chain = mri.reconstruct_motion_chain(states, MATRIX, iterations=4, backend="cpu", method="nufft",
                                         terms=["W:7:0:0.01", "T:1024:0:0.01"])
    assert chain["states_report"]["solver"] == "admm"
    assert chain["report"]["solver"] == "fista" and len(chain["report"]["objective"]) == 5
    assert chain["report"]["objective"][-1] < chain["report"]["objective"][0]
    assert "T:1024" in chain["note"]


def test_chain_refuses_bad_input(states):
    with pytest.raises(mri.InvalidArgument, match="chain.rounds"):
        mri.reconstruct_motion_chain(states, MATRIX, rounds=0, iterations=1, backend="cpu")
    with pytest.raises(ValueError, match="fields"):
        mri.reconstruct_motion_chain(states, MATRIX, fields=[None], iterations=1, backend="cpu")
    with pytest.raises(TypeError, match="motion"):
        mri.reconstruct_motion_chain(states, MATRIX, motion={"colour": 1}, iterations=1, backend="cpu")
    with pytest.raises(mri.InvalidArgument, match="LAMBDA"):
        mri.reconstruct_motion_chain(states, MATRIX, terms=["W:7:0:-1"], iterations=1, backend="cpu")
