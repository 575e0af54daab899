"""examples/python: the BART-files reconstruction (on files made by BART itself, against
`mri recon`) and one training run of the unrolled network."""

import importlib.util
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import mri
from conftest import cli_env, mri_tool

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"
CLI = mri_tool()


@pytest.mark.skipif(not CLI or not shutil.which("bart"), reason="needs the mri tool and BART")
def test_bart_recon_example_is_mri_recon_on_barts_files(tmp_path):
    subprocess.run(["bart", "traj", "-r", "-x", "64", "-y", "33", str(tmp_path / "t")], check=True)
    subprocess.run(["bart", "phantom", "-k", "-t", str(tmp_path / "t"), str(tmp_path / "k")], check=True)
    subprocess.run([sys.executable, str(EXAMPLES / "bart_recon.py"), str(tmp_path / "t"), str(tmp_path / "k"),
                    str(tmp_path / "x"), "64", "64"], check=True, capture_output=True, env=cli_env())
    subprocess.run([CLI, "recon", "--traj", str(tmp_path / "t"), "--kspace", str(tmp_path / "k"), "--matrix", "64,64",
                    "--lambda", "0.01", "--iterations", "30", "--quiet", "--out", str(tmp_path / "ref")],
                   check=True, capture_output=True, env=cli_env())
    np.testing.assert_array_equal(mri.io.read_cfl(tmp_path / "x"), mri.io.read_cfl(tmp_path / "ref"))


def test_unrolled_network_trains():
    torch = pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("unrolled_network", EXAMPLES / "unrolled_network.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    torch.manual_seed(0)
    losses = example.main(steps=4)
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]


def test_free_breathing_example_writes_the_state_stack(tmp_path):
    subprocess.run([sys.executable, str(EXAMPLES / "free_breathing.py"), str(tmp_path / "states")], check=True,
                   capture_output=True)
    stack = mri.io.read_cfl(tmp_path / "states")
    assert stack.shape == (32, 32, 4) and np.isfinite(stack).all() and np.abs(stack).max() > 0
