#!/usr/bin/python3
"""The lambda-PSNR curves of CS-2D (docs/cs2d_lambda_psnr.png): PSNR against lambda (BART's units)
for each tool and term, radial and spiral side by side, from the CSV that
benchmarks/cs/compare_with_bart.sh writes (tool,data,maps,term,lambda,iterations,psnr_db,...;
rows of one mri solver forced by MRI_ARGS carry tool "mri (SOLVER)"). W+T pairs are skipped.

    /usr/bin/python3 tools/docs/plot_lambda_psnr.py [out.png [sweep.csv]]

Needs Debian's python3-matplotlib (apt-get install python3-matplotlib).
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

SOURCE = "docs/data/cs2d_lambda_2026-12-06.csv"
DATA = [("rad", "golden-angle radial, 48 of 403 spokes"), ("spi", "spiral, 4 of 16 interleaves")]
STYLE = {"mri": "-", "bart": "--"}  # by the tool's first word
MARK = {"W": "o", "T": "s"}


def curves(path):
    """{(data, tool, term): [(lambda, psnr)] sorted by lambda}, single terms only."""
    out = {}
    for row in csv.DictReader(open(path)):
        if "/" in row["lambda"]:
            continue
        key = (row["data"], row["tool"], row["term"])
        out.setdefault(key, []).append((float(row["lambda"]), float(row["psnr_db"])))
    return {k: sorted(v) for k, v in out.items()}


def main():
    dst = sys.argv[1] if len(sys.argv) > 1 else "docs/cs2d_lambda_psnr.png"
    data = curves(sys.argv[2] if len(sys.argv) > 2 else SOURCE)
    fig, axes = plt.subplots(1, len(DATA), figsize=(11, 4.2), sharey=True)
    for ax, (name, title) in zip(axes, DATA):
        for (d, tool, term), points in sorted(data.items()):
            if d != name:
                continue
            xs, ys = zip(*points)
            label = f"{tool} {term}" + (" (auto: fista)" if tool == "mri" and term == "T" else "")
            ax.plot(xs, ys, STYLE[tool.split()[0]], marker=MARK[term], label=label)
        ax.set_xscale("log")
        ax.set_xlabel("lambda (BART's units)")
        ax.set_title(f"CS-2D {title}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("PSNR against the phantom (dB)")
    axes[-1].legend(fontsize=8, loc="lower left")
    fig.suptitle("256^2, 4 coils, SNR 30, 100 iterations: mri recon -R against bart pics -R ... -e", fontsize=10)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print("wrote", dst)


if __name__ == "__main__":
    main()
