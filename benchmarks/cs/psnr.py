#!/usr/bin/env python3
"""PSNR of a reconstruction against a ground truth, both BART .cfl/.hdr files.

Usage:  psnr.py TRUTH IMAGE        prints the PSNR in dB
        psnr.py --rms FILE         prints sqrt(mean |x|^2) over all elements
        psnr.py --max FILE         prints max |x| over all elements

Definition (the one used for every number in benchmarks/cs):
  t = |truth|, x = |image| (magnitude images, so a global phase does not matter);
  x is scaled by the least-squares optimal real scalar s = <x, t> / <x, x>, so the
  data scaling BART applies (pics without -S) does not matter;
  MSE = mean over the WHOLE image (no body mask: background artefacts count);
  PSNR = 10 log10(max(t)^2 / MSE).
Only the Python standard library is used (no numpy on the benchmark machines).
"""
import array
import math
import sys


def read_cfl(base):
    """Return (dims, list of complex) of BART file base.cfl/base.hdr."""
    if base.endswith(".cfl") or base.endswith(".hdr"):
        base = base[:-4]
    with open(base + ".hdr") as hdr:
        lines = [l.strip() for l in hdr]
    dims = [int(d) for d in lines[lines.index("# Dimensions") + 1].split()]
    data = array.array("f")
    with open(base + ".cfl", "rb") as cfl:
        data.frombytes(cfl.read())
    if sys.byteorder != "little":
        data.byteswap()
    n = math.prod(dims)
    if len(data) != 2 * n:
        sys.exit(f"{base}.cfl holds {len(data) // 2} values, header says {n}")
    return dims, data


def magnitudes(data):
    return [math.hypot(data[2 * i], data[2 * i + 1]) for i in range(len(data) // 2)]


def psnr_db(truth, image):
    t = magnitudes(truth)
    x = magnitudes(image)
    if len(t) != len(x):
        sys.exit(f"sizes differ: truth {len(t)} image {len(x)} elements")
    xx = sum(v * v for v in x)
    s = sum(a * b for a, b in zip(x, t)) / xx if xx > 0 else 0.0
    mse = sum((s * a - b) ** 2 for a, b in zip(x, t)) / len(t)
    peak = max(t)
    return float("inf") if mse == 0 else 10.0 * math.log10(peak * peak / mse)


def main(argv):
    if len(argv) == 3 and argv[1] == "--rms":
        _, d = read_cfl(argv[2])
        print(f"{math.sqrt(sum(v * v for v in d) / (len(d) // 2)):.9e}")
    elif len(argv) == 3 and argv[1] == "--max":
        _, d = read_cfl(argv[2])
        print(f"{max(magnitudes(d)):.9e}")
    elif len(argv) == 3:
        _, t = read_cfl(argv[1])
        _, x = read_cfl(argv[2])
        print(f"{psnr_db(t, x):.3f}")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
