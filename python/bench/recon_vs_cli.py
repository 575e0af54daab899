"""mri.reconstruct against `mri recon` on the same BART files (docs/python.md, "Against mri recon").

    PYTHONPATH=BUILD/python python3 recon_vs_cli.py BUILD/cli/mri [ROUNDS]

BART's own radial data: `bart traj -r -x 256 -y 403` and `bart phantom -k -t` (256^2, 103,168
samples, one coil), reconstructed with lam 0.01 (BART's units), 30 iterations, CPU, alternating
the tool and Python ROUNDS times (default 5). Prints whether the images are equal bit for bit,
their relative difference, and per round the reconstruct() time each reports (total_seconds) and
the Python call's wall time (reading the arrays' conversion included, not the file reading).
"""

import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import mri


def main():
    cli = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    work = pathlib.Path(tempfile.mkdtemp())
    subprocess.run(["bart", "traj", "-r", "-x", "256", "-y", "403", str(work / "t")], check=True)
    subprocess.run(["bart", "phantom", "-k", "-t", str(work / "t"), str(work / "k")], check=True)
    traj, ksp = mri.io.read_cfl(work / "t"), mri.io.read_cfl(work / "k")
    cli_times, py_totals, py_walls = [], [], []
    for _ in range(rounds):
        subprocess.run([cli, "recon", "--traj", str(work / "t"), "--kspace", str(work / "k"), "--matrix", "256,256",
                        "--lambda", "0.01", "--iterations", "30", "--backend", "cpu", "--quiet",
                        "--out", str(work / "x"), "--report", str(work / "r.json")], check=True)
        report = json.loads((work / "r.json").read_text())
        cli_times.append(report["reconstructions"][0]["total_seconds"])
        start = time.perf_counter()
        image, py_report = mri.reconstruct(traj, ksp, matrix=(256, 256), lam=0.01, iterations=30, backend="cpu",
                                           units="bart")
        py_walls.append(time.perf_counter() - start)
        py_totals.append(py_report["total_seconds"])
    reference = mri.io.read_cfl(work / "x")
    print(f"bitwise equal: {np.array_equal(image, reference)}, relative difference "
          f"{np.linalg.norm(image - reference) / np.linalg.norm(reference):.2e}, method {py_report['method']}")
    print("round, mri recon total_seconds, mri.reconstruct total_seconds, mri.reconstruct wall s")
    for i, (a, b, c) in enumerate(zip(cli_times, py_totals, py_walls)):
        print(f"{i}, {a:.4f}, {b:.4f}, {c:.4f}")
    print(f"medians: {statistics.median(cli_times):.4f}, {statistics.median(py_totals):.4f}, {statistics.median(py_walls):.4f}")


if __name__ == "__main__":
    main()
