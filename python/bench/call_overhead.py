"""Call overhead of mri.NufftOperator.forward over the C++ call (docs/python.md, "Overhead"):
python3 call_overhead.py PATH/TO/mri_python_call_overhead [ROUNDS]
(ninja -C BUILD mri_python_call_overhead; PYTHONPATH=BUILD/python). Alternates the C++ program and
the Python calls ROUNDS times (default 3) and prints each median in microseconds per call."""

import statistics
import subprocess
import sys
import timeit

import numpy as np

import mri


def python_median():
    points = mri.traj.uniform_random((32, 32), 1000, 1)
    op = mri.NufftOperator(points, (32, 32))
    i = np.arange(1024)
    x = np.asfortranarray((i % 7 + 1j * (i % 3)).reshape(32, 32, order="F").astype(np.complex64))
    runs = [timeit.timeit(lambda: op.forward(x), number=2000) / 2000 * 1e6 for _ in range(7)]
    return statistics.median(runs)


def main():
    program = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    for _ in range(rounds):
        cpp = float(subprocess.run([program], check=True, capture_output=True, text=True).stdout)
        py = python_median()
        print(f"C++ {cpp:.2f} us  Python {py:.2f} us  overhead {py - cpp:.2f} us")


if __name__ == "__main__":
    main()
