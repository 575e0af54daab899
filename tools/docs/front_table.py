#!/usr/bin/python3
"""Issue 15's front table from bench_nufft_front_gpu's CSV (tools/dev/nufft-front.sh): for each
geometry and type, at each tolerance cuFINUFFT was asked for, its fastest method's measured
error and execute time against our fastest configuration (any method, any tolerance asked)
whose measured error is at or below it. Markdown on stdout; a ratio above 1 is a miss, in bold.

    /usr/bin/python3 tools/docs/front_table.py nufft_front.csv [--peer-error own]

Errors are relative L2 against the same float64 direct sums (rel_err); --peer-error own takes
cuFINUFFT's against the sums at its own float radians (rel_err_own_points) instead.
Also prints, per 3D geometry and tolerance, the fastest deterministic method's time (RGA, or SMF
where the CSV has it) over the fastest float-atomic one (SM, GA): issue 15's determinism target.
"""
import argparse
import csv
from collections import defaultdict

NAMES = {"uniform3d": "3D uniform", "koosh3d": "3D koosh", "uniform2d": "2D uniform", "radial2d": "2D radial"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv")
    parser.add_argument("--peer-error", choices=["ours", "own"], default="ours")
    args = parser.parse_args()
    rows = defaultdict(list)  # (geometry, type) -> rows
    with open(args.csv, newline="") as f:
        for r in csv.DictReader(f):
            rows[(r["geometry"], int(r["type"]))].append(r)
    print("| geometry, type | cuFINUFFT's tolerance -> its error: ours / cuFINUFFT ms (ratio; ours: tolerance asked, W) |")
    print("|---|---|")
    for geometry in NAMES:
        for kind in (1, 2):
            group = rows.get((geometry, kind), [])
            ours = [r for r in group if r["library"] == "ours"]
            peer_column = "rel_err_own_points" if args.peer_error == "own" else "rel_err"
            cells = []
            for tol in sorted({r["tol"] for r in group if r["library"] != "ours"}, key=float, reverse=True):
                peer = min((r for r in group if r["library"] != "ours" and r["tol"] == tol),
                           key=lambda r: float(r["exec_ms"]))
                err = float(peer[peer_column])
                fits = [r for r in ours if float(r["rel_err"]) <= err]
                if not fits:
                    cells.append(f"{float(tol):.0e} -> {err:.0e}: none of ours as accurate")
                    continue
                best = min(fits, key=lambda r: float(r["exec_ms"]))
                ratio = float(best["exec_ms"]) / float(peer["exec_ms"])
                shown = f"**{ratio:.2f}**" if ratio > 1 else f"{ratio:.2f}"
                cells.append(f"{float(tol):.0e} -> {err:.0e}: {float(best['exec_ms']):.3f} / {float(peer['exec_ms']):.3f} ({shown}; "
                             f"{float(best['tol']):.0e}, W {best['width']})")
            if cells:
                print(f"| {NAMES[geometry]}, type {kind} | " + "; ".join(cells) + " |")
    print()
    for geometry in ("uniform3d", "koosh3d"):
        ratios = []
        for tol in sorted({r["tol"] for r in rows.get((geometry, 1), [])}, key=float, reverse=True):
            ms = {r["method"]: float(r["exec_ms"]) for r in rows[(geometry, 1)]
                  if r["library"] == "ours" and r["tol"] == tol}
            atomic = min(ms.get("SM-shared-scatter", float("inf")), ms.get("GA-global-scatter", float("inf")))
            deterministic = {m: ms[m] for m in ("RGA-gather", "SMF-fixed-point-scatter") if m in ms}
            if deterministic and atomic < float("inf"):
                fastest = min(deterministic, key=deterministic.get)
                ratios.append(f"{float(tol):.0e} {deterministic[fastest] / atomic:.2f} ({fastest.split('-')[0]})")
        print(f"fastest deterministic / fastest atomic, {NAMES[geometry]}: " + ", ".join(ratios))


if __name__ == "__main__":
    main()
