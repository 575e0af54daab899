"""CUDA tensors through mri.NufftOperator(backend="cuda") without a host copy, against the same
operator on NumPy arrays (the tensor copied to the host and back, as before the device entry
points) and against the plan's own device time (docs/python.md, "GPU"). Needs a GPU, PyTorch with
CUDA. python3 cuda_arrays.py [ROUNDS]: prints, per problem, the median wall time per call in
milliseconds of forward and adjoint on (a) Fortran-ordered CUDA tensors (read in place),
(b) C-ordered CUDA tensors (one device transpose), (c) NumPy host arrays, and (d) a host round
trip a caller would write (tensor.cpu().numpy(), op, torch.from_numpy(...).cuda())."""

import statistics
import sys
import time

import numpy as np
import torch

import mri


def median_ms(call, repeats=30):
    call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def fortran_tensor(array):
    return torch.from_numpy(array.T.copy()).cuda().T


def problem(matrix, spokes, readout):
    points = (mri.traj.radial(matrix, spokes, readout, golden=True) if len(matrix) == 2
              else mri.traj.koosh(matrix, spokes, readout))
    op = mri.NufftOperator(points, matrix, tolerance=1e-3, backend="cuda")
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(matrix) + 1j * rng.standard_normal(matrix)).astype(np.complex64)
    y = (rng.standard_normal(points.shape[0]) + 1j * rng.standard_normal(points.shape[0])).astype(np.complex64)
    xf, xc, yd = fortran_tensor(x), torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    xh, yh = np.asfortranarray(x), y
    rows = {
        "forward, Fortran CUDA tensor": lambda: op.forward(xf),
        "forward, C-ordered CUDA tensor": lambda: op.forward(xc),
        "forward, NumPy": lambda: op.forward(xh),
        "forward, host round trip": lambda: torch.from_numpy(op.forward(xc.cpu().numpy())).cuda(),
        "adjoint, CUDA tensor": lambda: op.adjoint(yd),
        "adjoint, NumPy": lambda: op.adjoint(yh),
        "adjoint, host round trip": lambda: torch.from_numpy(op.adjoint(yd.cpu().numpy())).cuda(),
    }
    return points.shape[0], rows


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    print(torch.cuda.get_device_name(0))
    for matrix, spokes, readout in [((256, 256), 403, 512), ((128, 128, 128), 8192, 256)]:
        samples, rows = problem(matrix, spokes, readout)
        for r in range(rounds):
            for name, call in rows.items():
                print(f"{'x'.join(map(str, matrix))} M={samples} round {r}: {name}: {median_ms(call):.3f} ms")


if __name__ == "__main__":
    main()
