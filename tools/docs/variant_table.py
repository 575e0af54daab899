#!/usr/bin/env python3
"""The deterministic methods against SM per variant build, from an A/B CSV of bench_nufft_front_gpu
runs with the columns call, variant, rep in front (docs/data/rga_koosh_variants_h200_2026-12-04.csv):
for each call, geometry and width, each variant's fastest RGA type-1 time over its repeats, and its
ratio to the fastest SM time of that call over every variant (SM does not depend on the variants);
where the CSV has them, the same for SM in fixed point (SMF) against SM. Markdown on stdout.

    /usr/bin/python3 tools/docs/variant_table.py docs/data/rga_koosh_variants_h200_2026-12-04.csv
"""
import collections
import csv
import sys


def main(path):
    best = collections.defaultdict(lambda: float("inf"))
    variants = collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        if r["library"] != "ours" or r["type"] != "1":
            continue
        method = r["method"].split("-")[0]
        if method not in ("RGA", "SM", "SMF"):
            continue
        if r["variant"] not in variants[r["call"]]:
            variants[r["call"]].append(r["variant"])
        for key in ((r["call"], r["geometry"], r["width"], method, r["variant"]), (r["call"], r["geometry"], r["width"], method)):
            best[key] = min(best[key], float(r["exec_ms"]))
    for call, names in variants.items():
        for method in ("RGA", "SMF"):
            cells = sorted({(k[1], k[2]) for k in best if k[0] == call and len(k) == 4 and k[3] == method})
            if not cells:
                continue
            print(f"\ncall {call}: {method} ms ({method} / SM)\n")
            print("| geometry | W | SM ms | " + " | ".join(names) + " |")
            print("|---|---|---|" + "---|" * len(names))
            for geometry, width in cells:
                sm = best[(call, geometry, width, "SM")]
                row = [f"{best[(call, geometry, width, method, v)]:.3f} ({best[(call, geometry, width, method, v)] / sm:.2f})"
                       for v in names]
                print(f"| {geometry} | {width} | {sm:.3f} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
