#!/usr/bin/python3
"""The Amdahl split of the GPU reconstructions (docs/recon_amdahl.png): each phase's share of the
end-to-end time, from the Google Benchmark JSON of bench_recon_gpu (tools/dev/recon-device.sh
bench; docs/data/bench_recon_gpu_h200_dirichlet.json), medians of the repetitions, with issue 4's
60% line.

    /usr/bin/python3 tools/docs/plot_recon_split.py [out.png [bench.json]]

Needs Debian's python3-matplotlib (apt-get install python3-matplotlib).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROWS = [  # (benchmark name prefix, label)
    ("RECON-3D/end-to-end/", "RECON-3D, Q spectrum by tensor-core Dirichlet sum"),
    ("RECON-3D/end-to-end-tuned-Q/", "RECON-3D, Q by Tuned kernel + FFT"),
    ("RECON-3D/end-to-end-cached-Q/", "RECON-3D, Q spectrum from the cache"),
    ("RECON-2D/end-to-end/", "RECON-2D"),
    ("RECON-2D/end-to-end-cached-Q/", "RECON-2D, Q spectrum from the cache"),
]
PHASES = [("fhd_s", "F^H D"), ("q_s", "Q"), ("fft_setup_s", "FFT setup"), ("cg_s", "CG (20 it.)"),
          ("transfer_s", "transfers"), ("setup_s", "setup")]


def medians(path):
    """{name prefix: counters of its median aggregate}."""
    runs = json.load(open(path))["benchmarks"]
    out = {}
    for prefix, _ in ROWS:
        for r in runs:
            if r["name"].startswith(prefix) and r.get("aggregate_name") == "median":
                out[prefix] = r
    return out


def main():
    dst = sys.argv[1] if len(sys.argv) > 1 else "docs/recon_amdahl.png"
    src = sys.argv[2] if len(sys.argv) > 2 else "docs/data/bench_recon_gpu_h200_dirichlet.json"
    data = medians(src)
    rows = [(label, data[prefix]) for prefix, label in ROWS if prefix in data]
    fig, ax = plt.subplots(figsize=(10, 0.6 * len(rows) + 1.8))
    handles = {}
    for y, (label, r) in enumerate(reversed(rows)):
        left = 0.0
        # The phases, then what the report does not attribute (host work between phases).
        shares = [(name, 100.0 * r[key] / r["total_s"], f"C{i}") for i, (key, name) in enumerate(PHASES)]
        shares.append(("other (host, between phases)", 100.0 - sum(v for _, v, _ in shares), "0.75"))
        for name, share, color in shares:
            handles[name] = ax.barh(y, share, left=left, color=color)
            if share >= 6:
                ax.text(left + share / 2, y, f"{share:.0f}%", ha="center", va="center", fontsize=8, color="white")
            left += share
        total = r["total_s"]
        ax.text(101, y, f"{total:.3f} s" if total >= 0.1 else f"{1e3 * total:.2f} ms", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [label for label, _ in reversed(rows)], fontsize=8)
    ax.axvline(60, color="black", linestyle="--", linewidth=1)
    ax.set_xlim(0, 112)
    ax.set_xlabel("share of the end-to-end time (%), total at the right; dashed: issue 4's 60% line")
    ax.legend(list(handles.values()), list(handles.keys()), loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=7,
              fontsize=7)
    ax.set_title("GPU reconstruction, Amdahl split (H200, bench_recon_gpu medians)", fontsize=10)
    fig.tight_layout()
    fig.savefig(dst, dpi=120)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
