#!/usr/bin/env python3
"""Lane-balance model of RGA's thread-per-item gather (cuda/nufft/gather_rga.cuh: gather_kernel).

A warp of the gather runs its sample loop as long as its busiest lane (each lane walks its item's
window rows as one sequence), so its cost is 32 x the largest item count among its lanes. This
script counts, on the NUFFT front's points (benchmarks/bench_nufft_front_gpu.cpp: 3D 128^3 koosh
8192 x 256 and uniform M = 2^21; 2D 256^2 radial 4096 x 256 and uniform M = 2^20; oversampling 2),
every item's samples as the kernel does (R = 8 points a row in 3D, 1 in 2D; the samples whose
window's first cell j0 = ceil(k g / n - W / 2) lies within W - 1 cells before the item's points on
each axis) and leaves out the dense items (above kGatherDense<D, W>, the dense kernel's). It prints
the share of lane slots that do work (lane efficiency) with each block's items in grid order and
sorted by count within the block (most first), and two costs of orderings relative to grid order:
  T (issue-bound): the sum over warps of 32 x their busiest lane;
  L (latency-bound): the sum over blocks of their busiest item (a block holds its place on the
    SM until its last warp ends),
for items sorted within each block (tile: 8 x 8 x 4 items in 3D, 32 x 8 in 2D), within groups of
2 x 2 x 2 and 4 x 4 x 2 tiles cut into blocks by rank (3D), and over the whole grid.

It models lane and block occupancy only: not memory, caches or the loads' latency.
Usage: model_rga_lanes.py MRI_BINARY [geometry W ...] (default: all four geometries at W 5 6 7)
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

RUN = {2: 1, 3: 8}
TILE = {2: (32, 8, 1), 3: (8, 8, 4)}  # items x, y, z a block of gather_kernel (cuda/nufft/gridding_cuda.cu)
GEOMETRIES = {
    "koosh3d": (3, 128, ["--traj", "koosh", "--matrix", "128,128,128", "--spokes", "8192", "--readout", "256"]),
    "uniform3d": (3, 128, 2**21),
    "radial2d": (2, 256, ["--traj", "radial", "--matrix", "256,256", "--spokes", "4096", "--readout", "256"]),
    "uniform2d": (2, 256, 2**20),
}


def dense_threshold(dims, w):
    """kGatherDense<D, W> (cuda/nufft/gather_rga.cuh)."""
    if dims == 2:
        return 256 if w <= 6 else 512
    return 256 if w <= 3 else 512 if w <= 5 else 1024


def read_cfl(base):
    with open(base + ".hdr") as f:
        dims = [int(v) for v in f.read().split("\n")[1].split()]
    return np.fromfile(base + ".cfl", np.complex64).reshape(-1, dims[0])  # [3, ...] first fastest: [samples, 3]


def points(mri, name):
    dims, n, spec = GEOMETRIES[name]
    if isinstance(spec, int):
        k = np.random.default_rng(1).uniform(-n / 2, n / 2, (spec, 3)).astype(np.float32)
        if dims == 2:
            k[:, 2] = 0
        return dims, n, k
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([mri, "traj", *spec, os.path.join(tmp, "t")], check=True)
        k = read_cfl(os.path.join(tmp, "t")).real.astype(np.float32)
    return dims, n, k


def box(a, axis, lo, hi):
    """out[i] = sum of a[i + s] over s in [lo, hi], periodic."""
    out = np.zeros_like(a)
    for s in range(lo, hi + 1):
        out += np.roll(a, -s, axis=axis)
    return out


def item_counts(dims, n, k, w):
    g = 2 * n
    j = np.mod(np.ceil(k[:, :dims].astype(np.float64) * g / n - 0.5 * w).astype(np.int64), g)
    shape = (g,) * dims
    cells = np.zeros(shape, np.int32)
    np.add.at(cells, tuple(j[:, a] for a in reversed(range(dims))), 1)  # [z,] y, x
    r = RUN[dims]
    work = box(cells, dims - 1, -(w - 1), r - 1)[..., ::r]  # x: cells x0 - W + 1 .. x0 + R - 1
    for axis in range(dims - 1):
        work = box(work, axis, -(w - 1), 0)  # y, z: rows y - W + 1 .. y
    return work if dims == 3 else work[np.newaxis]  # [z, y, ix]


def blocks_of(work, shape):
    """work [z, y, ix] cut into blocks of shape (x, y, z) items, zero-padded at the edges: [n, x y z]."""
    tx, ty, tz = shape
    z, y, x = work.shape
    work = np.pad(work, [(0, -z % tz), (0, -y % ty), (0, -x % tx)])
    z, y, x = work.shape
    return work.reshape(z // tz, tz, y // ty, ty, x // tx, tx).transpose(0, 2, 4, 1, 3, 5).reshape(-1, tx * ty * tz)


def costs(blocks):
    """T and L of blocks [n, 256] (see the module docstring)."""
    warps = blocks.reshape(-1, 32)
    return 32 * warps.max(axis=1).sum(), blocks.shape[1] * blocks.max(axis=1).sum()


def sorted_in(work, tiles_per_group):
    """3D: items sorted within groups of (x, y, z) tiles, cut into blocks of 256 by rank."""
    groups = blocks_of(work, tuple(a * b for a, b in zip(TILE[3], tiles_per_group)))
    return -np.sort(-groups, axis=1).reshape(-1, 256)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    mri, rest = sys.argv[1], sys.argv[2:]
    cases = [(rest[0], [int(v) for v in rest[1:]])] if rest else [(g, [5, 6, 7]) for g in GEOMETRIES]
    print("geometry W: items, dense (share of samples visited) | lane efficiency: grid order, sorted in blocks |"
          " T / L against grid order: sorted in blocks; in groups of 2x2x2, 4x4x2 tiles; over the grid")
    for name, widths in cases:
        dims, n, k = points(mri, name)
        for w in widths:
            work = item_counts(dims, n, k, w).astype(np.float64)
            dense = work > dense_threshold(dims, w)
            taken = np.where(dense, 0, work)
            blocks = blocks_of(taken, TILE[dims])
            done = taken.sum()
            t0, l0 = costs(blocks)
            orders = [-np.sort(-blocks, axis=1)]
            if dims == 3:
                orders += [sorted_in(taken, (2, 2, 2)), sorted_in(taken, (4, 4, 2))]
            orders.append(-np.sort(-taken.ravel())[: taken.size // 256 * 256].reshape(-1, 256))
            ratios = []
            for o in orders:
                t, l = costs(o)
                ratios.append(f"{t / t0:.2f} / {l / l0:.2f}")
            print(f"{name} W {w}: {work.size} items, {dense.sum()} dense ({work[dense].sum() / work.sum():.1%}) | "
                  f"{done / t0:.2f}, {done / costs(orders[0])[0]:.2f} | " + "; ".join(ratios))


if __name__ == "__main__":
    main()
