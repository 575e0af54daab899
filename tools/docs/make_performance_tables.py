#!/usr/bin/python3
"""Writes the tables of docs/performance.md from the data committed in docs/data/.

Each table sits between two markers in docs/performance.md,

    <!-- table:NAME -->
    ...generated: one line naming machine, date, command and data files, then the table...
    <!-- /table -->

and is made by the function registered under NAME below from Google Benchmark JSON, the CSV of
bench_nufft_front_gpu, or a small CSV transcribed from an earlier run. Machine, date and command
come from the data: `# key: value` lines at the top of a transcribed CSV, docs/data/sources.json
for raw benchmark output. Nothing here holds a figure of its own except the
published GFLOPS of the F^H D case study, quoted as literature.

    python3 tools/docs/make_performance_tables.py           rewrite docs/performance.md in place
    python3 tools/docs/make_performance_tables.py --check   exit 1 if it is out of date
    python3 tools/docs/make_performance_tables.py --print NAME

Standard library only (Debian's python3; no matplotlib, no pip).
"""
import argparse
import csv
import io
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data"
DOC = ROOT / "docs" / "performance.md"
MARKER = re.compile(r"<!-- table:(?P<name>[A-Za-z0-9_-]+) -->\n(?P<body>.*?)<!-- /table -->", re.S)


# ----------------------------------------------------------------------------------------------
# Reading the data
# ----------------------------------------------------------------------------------------------

def sources():
    return json.loads((DATA / "sources.json").read_text())


def read_csv(name):
    """(rows as dicts, metadata dict) of docs/data/NAME; metadata from its leading '# key: value'
    lines, or from sources.json for raw benchmark output without them."""
    lines = (DATA / name).read_text().splitlines()
    meta = {}
    while lines and lines[0].startswith("#"):
        key, _, value = lines.pop(0)[1:].partition(":")
        meta[key.strip()] = value.strip()
    if not meta:
        meta = dict(sources()["files"][name])
    return list(csv.DictReader(io.StringIO("\n".join(lines)))), meta


def read_bench(name):
    """({benchmark name: its median aggregate, or its one run when it ran once}, metadata)."""
    runs = json.loads((DATA / name).read_text())["benchmarks"]
    out = {}
    for r in runs:
        once = r.get("run_type") == "iteration" and r.get("repetitions", 1) == 1
        if r.get("aggregate_name") == "median":
            out[r["name"].removesuffix("_median")] = r
        elif once:
            out[r["name"]] = r
    return out, dict(sources()["files"][name])


def find(bench, prefix):
    """The one benchmark whose name starts with prefix (a table row that must exist)."""
    hits = [r for name, r in bench.items() if name.startswith(prefix)]
    if len(hits) != 1:
        raise SystemExit(f"make_performance_tables: {len(hits)} benchmarks match {prefix!r}")
    return hits[0]


# ----------------------------------------------------------------------------------------------
# Formatting
# ----------------------------------------------------------------------------------------------

def sci(x, digits=3):
    """3.19e11 (no '+', no leading zero in the exponent)."""
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def num(x, digits=3):
    """x to about `digits` significant digits, without exponent for ordinary magnitudes."""
    if x == 0:
        return "0"
    magnitude = len(str(int(abs(x)))) if abs(x) >= 1 else 0
    return f"{x:.{max(digits - magnitude, 0)}f}"


def ms(seconds):
    return num(seconds * 1e3)


def pct(part, whole):
    return f"{100.0 * part / whole:.0f}%"


def markdown(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def caption(*metas):
    """One line: machine(s), date(s), command(s) with their data files."""
    machines = sources()["machines"]
    names, dates, commands = [], [], []
    for meta in metas:
        for key in meta["machine"].split(";"):
            text = machines[key.strip()]
            if text not in names:
                names.append(text)
        if meta["date"] not in dates:
            dates.append(meta["date"])
        command = f"`{meta['command']}`"
        if "file" in meta:
            command += f" ([{meta['file']}](data/{meta['file']}))"
        commands.append(command)
    notes = "".join(f" {m['note'][0].upper()}{m['note'][1:]}." for m in metas if m.get("note"))
    return (f"*Machine:* {'; '.join(names)}. *Date:* {', '.join(dates)}. "
            f"*Command:* {'; '.join(commands)}.{notes}")


def with_file(meta, name):
    meta = dict(meta)
    meta["file"] = name
    return meta


def block(metas, table, after=""):
    text = caption(*metas) + "\n\n" + table + "\n"
    return text + ("\n" + after + "\n" if after else "")


def load_csv(name):
    rows, meta = read_csv(name)
    return rows, with_file(meta, name)


def load_bench(name):
    bench, meta = read_bench(name)
    return bench, with_file(meta, name)


# ----------------------------------------------------------------------------------------------
# F^H D: FHD-3D-S, FHD-3D-L, FHD-2D
# ----------------------------------------------------------------------------------------------

# (KernelPolicy, benchmark policy name, the GFLOPS of the F^H D case study of Stone et al. 2008 as
# the project's mission quotes them: other hardware, literature, not a measurement here)
STAGES = [("ScatterAtomic", "scatter-atomic", "slowest"), ("Gather", "gather", "~6"),
          ("Register", "register", "~9 -> 30"), ("ConstantChunked", "constant-chunked", "~80"),
          ("SfuTrig", "sfu-trig", "~200"), ("Tuned", "tuned", "~230 (38x)"),
          ("SeparableGemm", "separable-gemm", "")]
LABELS = {"Tuned": "`Tuned` (FP32 kernel)", "SeparableGemm": "`SeparableGemm` (float64, ZGEMM)"}
STAGE_FILES = ["bench_fhd_gpu_h200.json", "bench_fhd_gpu_h200_slice2.json", "bench_fhd_gpu_h200_gemm.json"]


def fhd_stages():
    runs, metas = {}, []
    for name in STAGE_FILES:  # a later run's figure replaces an earlier one's
        bench, meta = load_bench(name)
        metas.append(meta)
        for full, r in bench.items():
            parts = full.split("/")
            if parts[0].startswith("FHD-") and "pairs/s" in r:
                runs[(parts[0], parts[1] if parts[2].startswith("iterations") else "/".join(parts[1:3]))] = r
    gather = runs[("FHD-3D-L", "gather")]["pairs/s"]
    rows = []
    for policy, key, quoted in STAGES:
        s, l, d = (runs.get((p, key)) for p in ("FHD-3D-S", "FHD-3D-L", "FHD-2D"))
        cell = lambda r: sci(r["pairs/s"]) if r else "—"
        rows.append([LABELS.get(policy, f"`{policy}`"), cell(s), cell(l), f"{num(l['real_time'])} ms" if l else "—",
                     num(l["GFLOPS"], 4) if l else "—", f"{num(l['pairs/s'] / gather)}x" if l else "—",
                     f"{l['SFU_frac']:.3f}" if l else "—", sci(l["rel_err"], 2) if l else "—", cell(d), quoted])
    header = ["stage (`KernelPolicy`)", "FHD-3D-S pairs/s", "FHD-3D-L pairs/s", "FHD-3D-L time", "FHD-3D-L GFLOPS",
              "vs Gather", "of the SFU bound", "rel. error (3D-L)", "FHD-2D pairs/s", "case study, GFLOPS (other hardware)"]
    bound = find(read_bench(STAGE_FILES[0])[0], "SFU/")["bound_pairs/s"]
    after = (f"SFU bound measured in the same run: {sci(bound)} pairs/s (one `__sincosf` per pair). GFLOPS count "
             "13 FLOPs per pair, as the case study does. The last column quotes the case study (Stone et al. 2008; "
             "other hardware), not a measurement here.")
    return block(metas, markdown(header, rows), after)


def fhd_tensor_cores():
    rows, meta = load_csv("fhd_tensor_cores_h200_2026-12-04.csv")
    by_variant = defaultdict(dict)
    for r in rows:
        by_variant[r["variant"]][r["problem"]] = r
    table = []
    for variant, cells in by_variant.items():
        line = [variant]
        for problem in ("FHD-2D", "FHD-3D-S", "FHD-3D-L"):
            r = cells[problem]
            line.append(f"{r['ms']} ms, {sci(float(r['pairs_per_s']))}")
        line.append(cells["FHD-3D-L"]["rel_err"])
        table.append(line)
    header = ["`Tuned` kernel", "FHD-2D", "FHD-3D-S", "FHD-3D-L", "rel. error (3D-L)"]
    return block([meta], markdown(header, table))


def fhd_cpu():
    bench, meta = load_bench("bench_fhd_cpu.json")
    rows = []
    for label, prefix, timed in [("adjoint F^H D, float32 (separable GEMM, AVX-512)", "FHD2D_adjoint_f32", True),
                                 ("forward F, float32 (separable GEMM, AVX-512)", "FHD2D_forward_f32", True),
                                 ("adjoint, float64 direct sum (the reference)", "FHD2D_adjoint_f64", False),
                                 ("forward, float64 direct sum", "FHD2D_forward_f64", False)]:
        r = find(bench, prefix)
        rows.append([label, f"{num(r['real_time'])} ms" if timed else "—", sci(r["pairs/s"]),
                     sci(r["rel_err"], 2) if "rel_err" in r else "(reference)"])
    after = "The float64 rows time a 2^10-sample subset of the trajectory (their pairs/s is comparable, their time is not)."
    return block([meta], markdown(["path", "time", "pairs/s", "rel. L2 error vs float64"], rows), after)


# ----------------------------------------------------------------------------------------------
# Reconstructions
# ----------------------------------------------------------------------------------------------

RECON_FILE = "bench_recon_gpu_h200_dirichlet.json"


def recon_row(label, r, per_iteration=True):
    line = [label, f"**{ms(r['total_s'])} ms**", f"{ms(r['fhd_s'])} ms ({pct(r['fhd_s'], r['total_s'])})",
            f"{ms(r['q_s'])} ms ({pct(r['q_s'], r['total_s'])})" if r["q_s"] else "—",
            f"{ms(r['cg_s'])} ms" + (f" ({num(r['cg_iteration_ms'])} ms/it.)" if per_iteration else ""),
            f"{ms(r['transfer_s'])} ms", f"{ms(r['setup_s'] + r['fft_setup_s'])} ms"]
    line.append(f"{r['psnr_dB']:.2f} dB" if "psnr_dB" in r else "—")
    return line


RECON_HEADER = ["case", "end to end", "F^H D", "Q (or its spectrum)", "CG", "transfers", "setup + FFT plans", "PSNR"]


def recon2d_gpu():
    bench, meta = load_bench(RECON_FILE)
    rows = [recon_row(label, find(bench, prefix)) for label, prefix in [
        ("exact, Toeplitz", "RECON-2D/end-to-end/"),
        ("exact, Q's spectrum from the cache", "RECON-2D/end-to-end-cached-Q/"),
        ("`method = Nufft` (1e-3)", "RECON-2D/nufft/"),
        ("exact, `solver.normal = Direct` (two direct sums an iteration)", "RECON-2D/direct-normal/")]]
    after = ("End to end: host wall clock of `mri::reconstruct(backend = cuda)` after one warm-up call in the process "
             "(CUDA context, modules, cuFFT plans), median of 10; 20 CG iterations.")
    return block([meta], markdown(RECON_HEADER, rows), after)


def recon2d_cpu_bart():
    rows, meta = load_csv("recon2d_cpu_bart_2026-12-04.csv")
    table = [[r["run"], f"**{r['ours_ms']} ms**", f"{r['bart_ms']} ms",
              f"{float(r['bart_ms']) / float(r['ours_ms']):.1f}x"] for r in rows]
    return block([meta], markdown(["run", "ours, one CG iteration", "`bart pics`, one CG iteration", "ours faster by"], table))


CS2D_FILE = "cs2d_2026-12-06_fused.csv"


def cs3d_mc():
    rows, meta = load_csv("cs3d_mc_h100_2026-12-06.csv")
    cg = float(rows[0]["per_iteration_ms"])
    table = [[r["run"], r["solver"], r["iterations"], f"**{r['total_ms']} ms**", f"{r['per_iteration_ms']} ms",
              f"{float(r['per_iteration_ms']) / cg:.2f}x", r["psnr_db"]] for r in rows]
    return block([meta], markdown(["term", "solver", "iterations", "end to end", "per iteration",
                                   "per iteration / CG's", "PSNR (dB)"], table))


def cs2d():
    rows, meta = load_csv(CS2D_FILE)
    runs = {}
    for r in rows:  # repeated rows (the timing runs): the median seconds
        runs.setdefault((r["data"], r["term"], r["lambda"], r["tool"]), []).append(r)
    table = []
    for (data, term, lam, tool), rs in runs.items():
        if tool != "mri":
            continue
        bart = runs[(data, term, lam, "bart")]
        med = lambda rs, k: sorted(float(r[k]) for r in rs)[len(rs) // 2]
        table.append([{"rad": "radial", "spi": "spiral"}[data], term, lam,
                      f"**{med(rs, 'psnr_db'):.2f}** / {med(bart, 'psnr_db'):.2f}",
                      f"**{med(rs, 'seconds'):.2f} s** / {med(bart, 'seconds'):.2f} s",
                      f"{med(rs, 'seconds') / med(bart, 'seconds'):.2f}x",
                      f"{med(rs, 'peak_mb'):.0f} / {med(bart, 'peak_mb'):.0f} MB"])
    return block([meta], markdown(["data", "term", "lambda (BART's)", "PSNR dB: ours / bart", "time: ours / bart",
                                   "ours / bart", "peak memory: ours / bart"], table))


def recon_cold_start():
    rows, meta = load_csv("cold_start_h200_2026-12-02.csv")
    def value(r, key):
        if not r[key]:
            return "—"
        spread = r.get(key.replace("_ms", "_range_ms"))
        return f"{r[key]} ms" + (f" ({spread})" if spread else "")

    table = [[r["mode"], value(r, "plugin_load_ms"), value(r, "context_ms"), value(r, "first_ms"),
              value(r, "warm_ms"), f"**{value(r, 'first_minus_warm_ms')}**"] for r in rows]
    header = ["mode", "plugin load", "CUDA context alone", "first reconstruct", "warm (median of 5)", "first - warm"]
    return block([meta], markdown(header, table))


def recon3d_current():
    rows, meta = load_csv("recon3d_h200_2026-12-04.csv")
    fmt = lambda v: f"{ms(float(v))} ms" if v else "—"
    table = [[r["case"], f"**{fmt(r['total_s'])}**", fmt(r["fhd_s"]), fmt(r["q_s"])] for r in rows]
    return block([meta], markdown(["RECON-3D", "end to end", "F^H D", "Q's spectrum"], table))


def recon3d_split():
    bench, meta = load_bench(RECON_FILE)
    rows = [recon_row(label, find(bench, prefix)) for label, prefix in [
        ("exact: Q's spectrum by the tensor-core Dirichlet sum (default)", "RECON-3D/end-to-end/"),
        ("exact, Q summed by the `Tuned` kernel + FFT (`gpu.policy = Tuned`)", "RECON-3D/end-to-end-tuned-Q/"),
        ("exact, Q's spectrum from the cache", "RECON-3D/end-to-end-cached-Q/"),
        ("`method = Nufft`, 1e-3 (W 5), gather (default)", "RECON-3D/nufft/1/0/"),
        ("`method = Nufft`, 1e-3, scatter", "RECON-3D/nufft/1/1/"),
        ("`method = Nufft`, 1e-2 (W 4), scatter", "RECON-3D/nufft/10/1/"),
        ("`method = Nufft`, `solver.normal = Direct` (a NUFFT pair an iteration)", "RECON-3D/nufft-direct-normal/"),
        ("256^3 exact, 2 CG iterations", "RECON-3D-256/end-to-end/"),
        ("256^3 `method = Nufft`, 20 CG iterations", "RECON-3D-256/nufft/")]]
    after = ("Host wall clock after a warm-up call, median of 3 (exact, direct normal) or 5 (NUFFT, cached), one run at 256^3; "
             "shares of the end-to-end time in brackets; CG iterations timed by CUDA events.")
    return block([meta], markdown(RECON_HEADER, rows), after)


def recon3d_cpu():
    rows, meta = load_csv("recon3d_cpu_2026-11-30.csv")
    table = [[r["method"], f"**{r['total_s']} s**", f"{r['fhd_s']} s", f"{r['q_s']} s", f"{r['cg_s']} s",
              f"{r['psnr_db']} dB"] for r in rows]
    return block([meta], markdown(["RECON-3D on the CPU", "end to end", "F^H D", "Q", "CG (20 it.)", "PSNR"], table))


def recon2d_mc_cpu():
    rows, meta = load_csv("startup_bart_pics_2026-12-01.csv")
    table = []
    for r in rows:
        bold = lambda v: f"**{v}**" if r["program"].startswith("mri") and "iterations" in r["case"] else v
        table.append([r["program"], r["case"], r["min_wall_ms"], bold(r["median_wall_ms"]), r["median_cpu_ms"],
                      bold(r["peak_rss_mb"])])
    header = ["program", "case", "min wall ms", "median wall ms", "median CPU ms", "peak RSS MB"]
    return block([meta], markdown(header, table))


def recon2d_mc_gpu():
    rows, meta = load_csv("recon2d_mc_gpu_h200_2026-12-01.csv")
    table = [[r["method"], f"**{r['total_ms']} ms**", f"{r['cg_iteration_ms']} ms", f"{r['psnr_db']} dB"] for r in rows]
    return block([meta], markdown(["RECON-2D-MC on the GPU", "end to end", "CG iteration", "PSNR"], table))


def recon3d_mc():
    rows, meta = load_csv("recon3d_mc_h200_2026-12-01.csv")
    table = [[f"`method = {r['method']}`", f"**{r['total_ms']} ms**",
              f"{r['fhd_ms']} ms", f"{r['q_ms']} ms", f"{r['cg_ms']} ms ({r['cg_iteration_ms']} ms/it.)",
              f"{r['transfer_ms']} ms"] for r in rows]
    return block([meta], markdown(["method", "end to end", "F^H D (8 coils)", "Q", "CG (20 it.)", "transfers"], table))


# ----------------------------------------------------------------------------------------------
# GRID-2D
# ----------------------------------------------------------------------------------------------

def grid2d():
    cpu, cpu_meta = load_bench("bench_nufft_cpu.json")
    gpu, gpu_meta = load_bench("bench_nufft_gpu_h200.json")
    methods = [("GA: scatter (`Gridding::Scatter`; CPU: per-thread grids, GPU: global atomics)", "GRID2D/0/", "GRID2D/method:0/"),
               ("RGA: reverse gridding, gather (`Gridding::Gather`, deterministic)", "GRID2D/1/", "GRID2D/method:1/"),
               ("SM: shared-memory tiles (`ScatterMethod::Shared`, GPU)", None, "GRID2D/method:2/")]
    ga_cpu, ga_gpu = find(cpu, "GRID2D/0/")["real_time"], find(gpu, "GRID2D/method:0/")["real_time"]
    rows = []
    for label, cpu_name, gpu_name in methods:
        c = find(cpu, cpu_name)["real_time"] if cpu_name else None
        g = find(gpu, gpu_name)["real_time"]
        rows.append([label, f"{num(c)} ms ({c / ga_cpu:.2f}x GA)" if c else "—", f"{num(g)} ms ({g / ga_gpu:.2f}x GA)"])
    after = ("Adjoint gridding NUFFT at tolerance 1e-3 (W 5), execute only: median of 5 runs (CPU), median of 20 "
             "CUDA-event-timed executes on device-resident data (GPU).")
    return block([cpu_meta, gpu_meta], markdown(["method", "CPU, 2 threads", "H200"], rows), after)


def grid2d_propeller():
    rows, meta = load_csv("propeller_2d_2026-11-30.csv")
    table = [[r["method"], r["cpu"], r["h200_machine"], f"{r['psnr_db']} dB"] for r in rows]
    return block([meta], markdown(["method", "CPU VM", "H200 machine", "PSNR (best scale)"], table))


# ----------------------------------------------------------------------------------------------
# MOTION-3D, MOTION-SEQ
# ----------------------------------------------------------------------------------------------

def motion3d():
    cpu, cpu_meta = load_bench("bench_motion_cpu.json")
    gpu, gpu_meta = load_bench("bench_motion_gpu_h200.json")
    c_sor, c_jac = find(cpu, "BM_motion3d_cpu/1/"), find(cpu, "BM_motion3d_cpu/0/")
    g_sor, g_jac = find(gpu, "BM_motion3d_gpu/1/0/20/"), find(gpu, "BM_motion3d_gpu/0/0/20/")
    rows = []

    def line(label, c1, g1, c2, g2, bold=False):
        b = (lambda v: f"**{v}**") if bold else (lambda v: v)
        rows.append([label, num(c1), b(num(g1)), f"{c1 / g1:.0f}x", num(c2), b(num(g2)), f"{c2 / g2:.0f}x"])

    line("whole estimate", c_sor["real_time"], g_sor["real_time"], c_jac["real_time"], g_jac["real_time"], True)
    line("whole, CPU time of the main thread (an idle 2-core bound)", c_sor["cpu_time"], g_sor["real_time"],
         c_jac["cpu_time"], g_jac["real_time"])
    for label, key in [("Gaussian K_rho", "gaussian_ms"), ("solver", "solver_ms"), ("tensor + fold", "tensor_ms"),
                       ("warp", "warp_ms"), ("pyramid", "pyramid_ms"), ("gradients", "gradients_ms")]:
        line(label, c_sor[key], g_sor[key], c_jac[key], g_jac[key])
    rows.append(["transfers (host <-> device)", num(c_sor["transfer_ms"]), num(g_sor["transfer_ms"]), "",
                 num(c_jac["transfer_ms"]), num(g_jac["transfer_ms"]), ""])
    rows.append(["EPE (swirl), voxels", f"{c_sor['epe']:.4f}", f"{g_sor['epe']:.4f}", "", f"{c_jac['epe']:.4f}",
                 f"{g_jac['epe']:.4f}", ""])
    header = ["ms", "CPU, SOR", "H200, SOR", "GPU faster by", "CPU, Jacobi", "H200, Jacobi", "GPU faster by"]
    after = ("GPU: host wall time of `estimate()` (both frames up, the field down), median of 5 after a warm-up; "
             "stages by CUDA events. Cached memory policy, 20 solver iterations per warp.")
    return block([cpu_meta, gpu_meta], markdown(header, rows), after)


def motion3d_current():
    rows, meta = load_csv("motion3d_h200_2026-12-01.csv")
    return block([meta], markdown(["measure", "Jacobi", "SOR (default)"],
                                  [[r["measure"], r["jacobi"], r["sor"] or "—"] for r in rows]))


def motion_seq():
    rows, meta = load_csv("motion_seq_h200_2026-12-01.csv")
    table = [[r["solver"], f"**{r['total_ms']} ms**", r["mean_epe"]] for r in rows]
    return block([meta], markdown(["solver", "20 frames, 19 pairs", "mean EPE (voxels)"], table))


# ----------------------------------------------------------------------------------------------
# The NUFFT against cuFINUFFT and BART
# ----------------------------------------------------------------------------------------------

FRONT_FILE = "nufft_front_h100_2026-12-05.csv"
GEOMETRIES = {"uniform3d": "3D uniform", "koosh3d": "3D koosh", "uniform2d": "2D uniform", "radial2d": "2D radial"}
DETERMINISTIC = ("RGA-gather", "SMF-fixed-point-scatter")
ATOMIC = ("SM-shared-scatter", "GA-global-scatter")


def front_cells(rows):
    """{(geometry, type): [(peer tol, peer error, ours ms, peer ms, ours row)]}: at each tolerance
    cuFINUFFT was asked for, its fastest method against our fastest configuration (any method, any
    tolerance asked) whose measured error is at or below the peer's."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["geometry"], int(r["type"]))].append(r)
    cells = {}
    for key, group in groups.items():
        ours = [r for r in group if r["library"] == "ours"]
        out = []
        for tol in sorted({r["tol"] for r in group if r["library"] != "ours"}, key=float, reverse=True):
            peer = min((r for r in group if r["library"] != "ours" and r["tol"] == tol), key=lambda r: float(r["exec_ms"]))
            err = float(peer["rel_err"])
            fits = [r for r in ours if float(r["rel_err"]) <= err]
            best = min(fits, key=lambda r: float(r["exec_ms"])) if fits else None
            out.append((tol, err, float(best["exec_ms"]) if best else None, float(peer["exec_ms"]), best))
        cells[key] = out
    return cells


def nufft_front():
    rows, meta = load_csv(FRONT_FILE)
    cells = front_cells(rows)
    tols = [t for t, *_ in next(iter(cells.values()))]
    table, ratios = [], defaultdict(list)
    for geometry, name in GEOMETRIES.items():
        for kind in (1, 2):
            line = [f"{name}, type {kind}"]
            for tol, err, ours, peer, best in cells[(geometry, kind)]:
                if ours is None:
                    line.append(f"{sci(err, 1)}: none of ours as accurate")
                    continue
                ratio = ours / peer
                ratios[name[:2]].append(ratio)
                shown = f"**{ratio:.2f}**" if ratio > 1 else f"{ratio:.2f}"
                line.append(f"{sci(err, 1)}: {ours:.3f} / {peer:.3f} ({shown})")
            table.append(line)
    header = ["geometry, type"] + [f"cuFINUFFT tol {sci(float(t), 1)}" for t in tols]
    every = [r for v in ratios.values() for r in v]
    after = (f"Each cell: cuFINUFFT's measured error: our execute ms / cuFINUFFT's ms (ratio; above 1 in bold). "
             f"**Ours at or below cuFINUFFT's time in {sum(r <= 1 for r in every)} of {len(every)} cells**; "
             f"ratios 3D {min(ratios['3D']):.2f}-{max(ratios['3D']):.2f}, 2D {min(ratios['2D']):.2f}-{max(ratios['2D']):.2f}.")
    return block([meta], markdown(header, table), after)


def nufft_deterministic():
    rows, meta = load_csv(FRONT_FILE)
    table = []
    for geometry in ("uniform3d", "koosh3d"):
        times = defaultdict(dict)
        for r in rows:
            if r["geometry"] == geometry and r["type"] == "1" and r["library"] == "ours":
                times[r["tol"]][r["method"]] = (float(r["exec_ms"]), r["width"])
        line = [GEOMETRIES[geometry]]
        for tol in sorted(times, key=float, reverse=True):
            t = times[tol]
            fastest = min((m for m in DETERMINISTIC if m in t), key=lambda m: t[m][0])
            atomic = min(t[m][0] for m in ATOMIC if m in t)
            line.append(f"{t[fastest][0] / atomic:.2f} ({fastest.split('-')[0]}, W {t[fastest][1]})")
        table.append(line)
        tols = sorted(times, key=float, reverse=True)
    header = ["adjoint (type 1)"] + [f"tol {sci(float(t), 1)}" for t in tols]
    after = ("Each cell: the fastest deterministic method's time (RGA or SMF) over the fastest float-atomic one "
             "(SM or GA), the deterministic method and width in brackets.")
    return block([meta], markdown(header, table), after)


def plan_pairs(rows, keep, key):
    """[(ours ms, cuFINUFFT method 1 ms)]: each of our plans (one serves both types) against
    cuFINUFFT's makeplan + setpts for each type at the same key (tolerance, repetition)."""
    ours, peer = {}, defaultdict(list)
    for r in rows:
        if not keep(r):
            continue
        if r["library"] == "ours":
            ours[key(r)] = float(r["plan_ms"])
        elif r["method"] == "method1":
            peer[key(r)].append(float(r["plan_ms"]))
    return [(ours[k], p) for k in ours for p in peer[k]]


def nufft_plan():
    rows, meta = load_csv(FRONT_FILE)
    table = []
    for geometry, name in GEOMETRIES.items():
        pairs = plan_pairs(rows, lambda r: r["geometry"] == geometry, lambda r: r["tol"])
        o = sorted({a for a, _ in pairs})
        p = [b for _, b in pairs]
        table.append([name, f"{statistics.median(o):.2f} ({min(o):.2f}-{max(o):.2f})",
                      f"{statistics.median(p):.2f} ({min(p):.2f}-{max(p):.2f})",
                      f"{sum(a > b for a, b in pairs)} of {len(pairs)}"])
    header = ["geometry", "ours: plan ms, median (range)", "cuFINUFFT method 1: makeplan + setpts ms",
              "plans where ours is slower"]
    after = ("Plan from host points: host wall clock until ready, median of 5 after a warm-up plan, at each of the 5 "
             "tolerances; our one plan serves both types, compared with cuFINUFFT's plan for each type.")
    return block([meta], markdown(header, table), after)


def nufft_plan_2d_ab():
    rows, meta = load_csv("nufft_plan2d_ab_h100_2026-12-05.csv")
    table = []
    for geometry in ("uniform2d", "radial2d"):
        pairs = plan_pairs(rows, lambda r: r["variant"] == "packed" and r["geometry"] == geometry,
                           lambda r: (r["rep"], r["tol"]))
        table.append([GEOMETRIES[geometry], f"**{statistics.median(sorted({a for a, _ in pairs})):.2f}**",
                      f"{statistics.median(b for _, b in pairs):.2f}", f"{sum(a > b for a, b in pairs)} of {len(pairs)}"])
    header = ["geometry", "ours: plan ms, median", "cuFINUFFT method 1, median", "plans where ours is slower"]
    after = ("15 of our plans a geometry (5 tolerances x 3 repetitions), each against cuFINUFFT's plans for both "
             "types in the same run.")
    return block([meta], markdown(header, table), after)


def nufft_cpu_bart():
    rows, meta = load_csv("nufft_cpu_bart_2026-12-04.csv")
    bold = lambda r, v: f"**{v}**" if r["program"].startswith("`mri") else v
    table = [[r["program"], bold(r, f"{r['best_s']} s"), bold(r, f"{r['median_s']} s"), r["rel_err"]] for r in rows]
    return block([meta], markdown(["program", "best", "median", "rel. L2 error vs the exact sum"], table))


def nufft_accuracy():
    rows, meta = load_csv("nufft_accuracy_2026-11-30.csv")
    table = [[r["W"], f"{r['beta']} ({r['beta_beatty']})", f"{r['aliasing']} ({r['aliasing_beatty']})",
              f"{r['estimate_2d']} / {r['estimate_3d']}",
              f"{r['measured_random']} / {r['measured_tiny']} / {r['measured_aligned_3d']}", r["chosen_for"]] for r in rows]
    header = ["W", "beta (Beatty's)", "aliasing per axis (with Beatty's beta)", "estimate 2D / 3D",
              "measured: random / tiny / aligned 3D", "chosen for tolerance"]
    return block([meta], markdown(header, table))


TABLES = {
    "FHD-STAGES": fhd_stages, "FHD-TENSOR": fhd_tensor_cores, "FHD-CPU": fhd_cpu,
    "CS-3D-MC": cs3d_mc, "CS-2D": cs2d,
    "RECON-2D-GPU": recon2d_gpu, "RECON-2D-CPU-BART": recon2d_cpu_bart, "RECON-2D-COLD-START": recon_cold_start,
    "RECON-3D-CURRENT": recon3d_current, "RECON-3D-SPLIT": recon3d_split, "RECON-3D-CPU": recon3d_cpu,
    "GRID-2D": grid2d, "GRID-2D-PROPELLER": grid2d_propeller,
    "RECON-2D-MC-CPU": recon2d_mc_cpu, "RECON-2D-MC-GPU": recon2d_mc_gpu, "RECON-3D-MC": recon3d_mc,
    "MOTION-3D": motion3d, "MOTION-3D-CURRENT": motion3d_current, "MOTION-SEQ": motion_seq,
    "NUFFT-FRONT": nufft_front, "NUFFT-DETERMINISTIC": nufft_deterministic, "NUFFT-PLAN": nufft_plan,
    "NUFFT-PLAN-2D": nufft_plan_2d_ab, "NUFFT-CPU-BART": nufft_cpu_bart, "NUFFT-ACCURACY": nufft_accuracy,
}


def regenerate(text):
    """(new text, names of the tables that changed); every marker must name a table and every table
    must have a marker."""
    found, changed = [], []

    def replace(match):
        name = match["name"]
        if name not in TABLES:
            raise SystemExit(f"make_performance_tables: {DOC.name} has a marker for unknown table {name!r}")
        found.append(name)
        body = TABLES[name]()
        if body != match["body"]:
            changed.append(name)
        return f"<!-- table:{name} -->\n{body}<!-- /table -->"

    new = MARKER.sub(replace, text)
    missing = sorted(set(TABLES) - set(found))
    if missing:
        raise SystemExit(f"make_performance_tables: no marker in {DOC.name} for {', '.join(missing)}")
    return new, changed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/performance.md is out of date")
    parser.add_argument("--print", metavar="NAME", choices=sorted(TABLES), help="print one table and exit")
    args = parser.parse_args()
    if args.print:
        sys.stdout.write(TABLES[args.print]())
        return 0
    text = DOC.read_text()
    new, changed = regenerate(text)
    if args.check:
        if changed:
            print(f"{DOC.relative_to(ROOT)} is out of date: {', '.join(changed)} "
                  f"(run python3 tools/docs/make_performance_tables.py)", file=sys.stderr)
            return 1
        print(f"{DOC.relative_to(ROOT)}: {len(TABLES)} tables up to date")
        return 0
    if new != text:
        DOC.write_text(new)
    print(f"{DOC.relative_to(ROOT)}: {len(changed)} of {len(TABLES)} tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
