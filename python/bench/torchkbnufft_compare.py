"""mri.torch against torchkbnufft on the CPU, in one run (docs/python.md, "Against torchkbnufft").

    PYTHONPATH=BUILD/python:PEERS/torchkbnufft-bda32ab python3 torchkbnufft_compare.py [N SPOKES READOUT]

Problem (issue 44): a 256^2 image, golden-angle radial 403 spokes x 512 = 206,336 samples, one
coil, complex64 tensors, warm operators, torch on all cores. Errors against the exact sums in
float64 (mri.ExactOperator): the forward on 2,048 random samples of the trajectory, the adjoint of
data on those samples only (zero elsewhere; both NUFFTs still run on the whole trajectory), the
Toeplitz normal operators built from those samples alone. Our NUFFT tolerance: the loosest of a
sweep whose measured errors are at most torchkbnufft's (default: 6 neighbours, 2x grid). Times:
median of 7 calls after 2 warm-up calls, each side alternating.
"""

import os
import statistics
import sys
import time

import numpy as np
import torch
import torchkbnufft as tkbn

import mri
import mri.torch


def rel(a, b):
    a, b = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def median_seconds(function, repeats=7, warmup=2):
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class Tkbn:
    """torchkbnufft's forward, adjoint and Toeplitz normal on our points (radians = 2 pi k / n)."""

    def __init__(self, points, matrix):
        self.matrix = matrix
        self.ktraj = torch.from_numpy(np.ascontiguousarray((2 * np.pi * points / np.asarray(matrix, np.float32)).T))
        self.fwd = tkbn.KbNufft(im_size=matrix)
        self.adj = tkbn.KbNufftAdjoint(im_size=matrix)

    def forward(self, x):
        return self.fwd(x[None, None], self.ktraj)[0, 0]

    def adjoint(self, y):
        return self.adj(y[None, None], self.ktraj)[0, 0]

    def toeplitz(self):
        kernel = tkbn.calc_toeplitz_kernel(self.ktraj, self.matrix)
        toep = tkbn.ToepNufft()
        return lambda x: toep(x[None, None], kernel)[0, 0]


def main():
    n, spokes, readout = (int(v) for v in sys.argv[1:4]) if len(sys.argv) > 3 else (256, 403, 512)
    torch.set_num_threads(os.cpu_count())  # as the SDK's OpenMP team (torch's default may be fewer)
    matrix = (n, n)
    points = mri.traj.radial(matrix, spokes, readout, golden=True)
    rng = np.random.default_rng(1)
    subset = np.sort(rng.choice(points.shape[0], 2048, replace=False))
    x = (rng.standard_normal(matrix) + 1j * rng.standard_normal(matrix)).astype(np.complex64)
    y_sub = (rng.standard_normal(2048) + 1j * rng.standard_normal(2048)).astype(np.complex64)
    y = np.zeros(points.shape[0], np.complex64)
    y[subset] = y_sub
    exact = mri.ExactOperator(points[subset], matrix, precision="float64")
    ref_forward, ref_adjoint = exact.forward(x), exact.adjoint(y_sub)
    ref_normal = exact.adjoint(exact.forward(x))
    xt, yt = torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y)
    print(f"{n}^2, {points.shape[0]} radial samples, torch threads {torch.get_num_threads()}, "
          f"mri {mri.__version__}")

    peer = Tkbn(points, matrix)
    peer_forward_error = rel(peer.forward(xt).numpy()[subset], ref_forward)
    peer_adjoint_error = rel(peer.adjoint(yt).numpy(), ref_adjoint)
    peer_normal_error = rel(Tkbn(points[subset], matrix).toeplitz()(xt).numpy(), ref_normal)

    chosen = None
    for tolerance in (1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4, 1e-5):
        op = mri.NufftOperator(points, matrix, tolerance=tolerance)
        errors = (rel(op.forward(x)[subset], ref_forward), rel(op.adjoint(y), ref_adjoint))
        print(f"  mri tolerance {tolerance:g}: forward error {errors[0]:.2e}, adjoint error {errors[1]:.2e}")
        if errors[0] <= peer_forward_error and errors[1] <= peer_adjoint_error:
            chosen = tolerance
            break
    ours = mri.torch.LinearOp(mri.NufftOperator(points, matrix, tolerance=chosen))
    sub_normal = mri.ToeplitzNormal(points[subset], matrix, method="nufft", tolerance=chosen)
    our_normal_error = rel(sub_normal(x), ref_normal)
    normal = mri.torch.LinearOp(mri.ToeplitzNormal(points, matrix, method="nufft", tolerance=chosen))
    peer_normal = peer.toeplitz()

    rows = [("forward", lambda: ours(xt), lambda: peer.forward(xt),
             rel(ours.op.forward(x)[subset], ref_forward), peer_forward_error),
            ("adjoint", lambda: ours.adjoint(yt), lambda: peer.adjoint(yt),
             rel(ours.op.adjoint(y), ref_adjoint), peer_adjoint_error),
            ("toeplitz normal", lambda: normal(xt), lambda: peer_normal(xt), our_normal_error, peer_normal_error)]
    print(f"mri tolerance {chosen:g}")
    print("operation, mri s, torchkbnufft s, speed-up, mri error, torchkbnufft error")
    for name, mine, theirs, my_error, their_error in rows:
        t_mine, t_theirs = median_seconds(mine), median_seconds(theirs)
        print(f"{name}, {t_mine:.4f}, {t_theirs:.4f}, {t_theirs / t_mine:.1f}x, {my_error:.2e}, {their_error:.2e}")


if __name__ == "__main__":
    main()
