#!/usr/bin/python3
"""The NUFFT time-accuracy front (issue 15, docs/nufft_front_h200.png) from the CSV that
bench_nufft_front_gpu writes (tools/dev/nufft-front.sh: $OUT/nufft_front.csv): one panel per
geometry and type, execute time against measured relative error, one line per library and
method, each marker labelled by the tolerance it was asked for. Ours: solid lines; cuFINUFFT:
dashed. The goal reads off each panel: ours at or below cuFINUFFT's time at every error level.

    /usr/bin/python3 tools/docs/plot_nufft_front.py nufft_front.csv [out.png] [--peer-error own]

--peer-error own: cuFINUFFT's points at the error against the direct sums at its own float
radians (rel_err_own_points) instead of the common reference at our float k (rel_err).
Needs Debian's python3-matplotlib (apt-get install python3-matplotlib).
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

GEOMETRIES = ["uniform3d", "koosh3d", "uniform2d", "radial2d"]
TYPES = {1: "type 1 (adjoint)", 2: "type 2 (forward)"}
# One colour per library and method in every panel: ours warm, cuFINUFFT cool.
COLOURS = {"RGA-gather": "tab:red", "SM-shared-scatter": "tab:orange", "GA-global-scatter": "tab:brown",
           "SMF-fixed-point-scatter": "tab:olive",
           "forward": "tab:red", "method1": "tab:blue", "method2": "tab:cyan", "method3": "tab:purple"}


def load(path, peer_error):
    """{(geometry, type): {(library, method): [(rel_err, exec_ms, tol), ...] sorted by tol}},
    and each geometry's title (grid and M)."""
    panels, titles = defaultdict(lambda: defaultdict(list)), {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            column = "rel_err_own_points" if peer_error == "own" and r["library"] != "ours" else "rel_err"
            point = (float(r[column]), float(r["exec_ms"]), float(r["tol"]))
            panels[(r["geometry"], int(r["type"]))][(r["library"], r["method"])].append(point)
            titles[r["geometry"]] = f"{r['geometry']}, {r['dims']}-D, M = {int(r['M']):,}"
    for lines in panels.values():
        for points in lines.values():
            points.sort(key=lambda p: -p[2])
    return panels, titles


def draw_panel(ax, lines):
    for (library, method), points in sorted(lines.items()):
        xs, ys, tols = zip(*points)
        ours = library == "ours"
        ax.plot(xs, ys, "-" if ours else "--", marker="o" if ours else "s", markersize=4,
                color=COLOURS.get(method), label=f"{library} {method}")
        for x, y, tol in points:
            ax.annotate(f"{tol:.0e}", (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6)
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", linewidth=0.3)
    ax.set_xlabel("measured relative L2 error")
    ax.set_ylabel("execute time (ms)")
    ax.legend(fontsize=6)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv")
    parser.add_argument("png", nargs="?", default="docs/nufft_front_h200.png")
    parser.add_argument("--peer-error", choices=["common", "own"], default="common")
    args = parser.parse_args()
    panels, titles = load(args.csv, args.peer_error)
    geometries = [g for g in GEOMETRIES if any((g, t) in panels for t in TYPES)]
    fig, axes = plt.subplots(len(geometries), len(TYPES), figsize=(11, 3.6 * len(geometries)), squeeze=False)
    for row, geometry in enumerate(geometries):
        for col, (t, name) in enumerate(TYPES.items()):
            ax = axes[row][col]
            if (geometry, t) in panels:
                draw_panel(ax, panels[(geometry, t)])
            ax.set_title(f"{titles.get(geometry, geometry)}: {name}", fontsize=9)
    fig.suptitle("NUFFT time vs measured error, float32, ours and cuFINUFFT 2.5.1 in one run "
                 f"(markers: requested tolerance; cuFINUFFT error: {args.peer_error} reference)", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print("wrote", args.png)


if __name__ == "__main__":
    main()
