#!/usr/bin/python3
"""Bar chart of the F^H D stage benchmark (docs/fhd_stages.png) from the Google Benchmark JSON
that tools/dev/device-bench.sh writes (docs/data/bench_fhd_gpu_h200.json: the seed stages;
docs/data/bench_fhd_gpu_h200_slice2.json: the later run with separable-gemm, whose figures
replace the first run's where both have a benchmark).

    /usr/bin/python3 tools/docs/plot_performance.py [out.png [bench.json ...]]

Needs Debian's python3-matplotlib (apt-get install python3-matplotlib).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

STAGES = ["scatter-atomic", "gather", "register", "constant-chunked", "sfu-trig", "tuned", "separable-gemm"]
SOURCES = ["docs/data/bench_fhd_gpu_h200.json", "docs/data/bench_fhd_gpu_h200_slice2.json"]
PROBLEMS = ["FHD-3D-S", "FHD-3D-L", "FHD-2D"]


def medians(path):
    """({(problem, policy): pairs/s}, SFU bound in pairs/s): the median aggregate, or the one
    run of a benchmark repeated once (scatter-atomic is slow by design)."""
    runs = json.load(open(path))["benchmarks"]
    bound = next(r["bound_pairs/s"] for r in runs if "bound_pairs/s" in r)
    out = {}
    for r in runs:
        single = r.get("repetitions") == 1 and r.get("run_type") == "iteration"
        if "pairs/s" not in r or not (single or r.get("aggregate_name") == "median"):
            continue
        problem, policy = r["name"].split("/")[:2]
        out[(problem, policy)] = r["pairs/s"]
    return out, bound


def main():
    dst = sys.argv[1] if len(sys.argv) > 1 else "docs/fhd_stages.png"
    data, bound = {}, None
    for src in sys.argv[2:] or SOURCES:
        more, bound = medians(src)
        data.update(more)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(PROBLEMS)
    for i, problem in enumerate(PROBLEMS):
        xs = [s + (i - 1) * width for s in range(len(STAGES))]
        ys = [data.get((problem, stage), 0) for stage in STAGES]
        bars = ax.bar(xs, ys, width, label=problem)
        for x, y in zip(xs, ys):
            if y:
                ax.text(x, y * 1.1, f"{y:.1e}", ha="center", va="bottom", rotation=90, fontsize=7)
    ax.axhline(bound, color="k", linestyle="--", linewidth=1)
    ax.text(len(STAGES) - 0.5, bound * 1.15, "SFU bound, one sincos per pair", ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(5e10, 1e14)
    ax.set_xticks(range(len(STAGES)))
    ax.set_xticklabels(STAGES)
    ax.set_ylabel("pairs/s (N*M / time)")
    ax.set_title("F^H D optimisation stages on one NVIDIA H200 (median, CUDA events; separable-gemm in float64)")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(dst, dpi=120)
    print("wrote", dst)


if __name__ == "__main__":
    main()
