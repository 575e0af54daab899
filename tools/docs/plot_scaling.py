#!/usr/bin/python3
"""The scaling model of issue 16 item 3 (docs/scaling.md, "Model: 8 GPUs and N hosts"): the 8-GPU
and N-host figures *modelled* from phases measured on ONE H200 and on the 2-core CPU machine, with
the interconnect figures ASSUMED (only the one-GPU kind was lent: nothing here was measured on two
GPUs or across hosts). Each case is an Amdahl sum of its phases: what splits (divided by N, in the
granularity the code splits it: planes, spectrum tiles, coils, slices), what does not, and what
communication adds per N. Writes the plot (docs/scaling_model.png) and the modelled numbers
(docs/data/scaling_model.csv); prints the figures that docs/scaling.md quotes.

    /usr/bin/python3 tools/docs/plot_scaling.py [out.png [out.csv]]

No input files: the measured inputs are the constants below, each with its command, machine and
date. Needs Debian's python3-matplotlib (apt-get install python3-matplotlib); no network.
"""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

MB = 1e6
GB = 1e9
US = 1e-6
MS = 1e-3

# ------------------------------------------------------------------------------------------------
# MEASURED on one NVIDIA H200 (driver 580.159.04, CUDA 13.0, host "Intel(R) Xeon(R) Processor",
# 16 cores), 2026-12-02.
# ------------------------------------------------------------------------------------------------

# RECON-3D exact (128^3, koosh 2^20 samples, 20 CG iterations, one coil), Q by the tensor-core
# Dirichlet spectrum (policy Auto). 2026-12-02 06:21 UTC, staged build of h16 at 1844320,
# `MRI_BENCH_DEVICES=0,0 bench_recon_gpu --benchmark_filter=devices`, medians of 3
# (docs/scaling.md, "On one GPU: the splits' own cost").
EXACT_ONE_TOTAL_S = 0.594      # one device, end to end
EXACT_FHD_S = 0.234            # F^H D, one device
EXACT_Q_S = 0.325              # Q (Dirichlet spectrum), one device
EXACT_REST_S = EXACT_ONE_TOTAL_S - EXACT_FHD_S - EXACT_Q_S  # CG (0.011 s), transfers, setup: 0.035 s
EXACT_SPLIT2_TOTAL_S = 0.663   # devices = {0, 0}: the two slabs in turn on the one GPU
EXACT_SPLIT2_FHD_SLAB_S = 0.117  # each F^H D slab (half the z planes)
EXACT_SPLIT2_Q_SLAB_S = 0.170    # each Q slab (half the spectrum's fz planes)
# What the split adds that does not divide: the {0, 0} total minus its four slabs minus one
# device's unsplit rest = 0.054 s (the Q spectrum's host round trip, 64 MB each way, and the
# second slab's plan setup, which ran in turn on the one GPU).
EXACT_SPLIT_FIXED_S = EXACT_SPLIT2_TOTAL_S - 2 * EXACT_SPLIT2_FHD_SLAB_S - 2 * EXACT_SPLIT2_Q_SLAB_S - EXACT_REST_S
# Each Q slab costs more than half: 0.170 - 0.325 / 2 = 0.0075 s per slab, taken as a fixed cost
# per slab (every slab walks all 2^20 samples).
EXACT_Q_PER_SLAB_S = EXACT_SPLIT2_Q_SLAB_S - EXACT_Q_S / 2
EXACT_FHD_PLANES = 128          # F^H D is split by the 128 z planes
EXACT_Q_TILES = 256 // 8        # the Dirichlet spectrum by its 256 fz planes, in tiles of 8

# The same with Q by the Tuned sum (policy Tuned), same call: one device 1.20 s (F^H D 0.23, Q
# 0.94; docs/performance.md), {0, 0} 1.227 s with slabs F^H D 0.116 / 0.116 s, Q 0.478 / 0.464 s.
TUNED_ONE_TOTAL_S = 1.20
TUNED_FHD_S = 0.23
TUNED_Q_S = 0.94
TUNED_REST_S = TUNED_ONE_TOTAL_S - TUNED_FHD_S - TUNED_Q_S
TUNED_SPLIT2_TOTAL_S = 1.227
TUNED_SPLIT2_SLABS_S = 0.116 + 0.116 + 0.478 + 0.464
TUNED_SPLIT_FIXED_S = TUNED_SPLIT2_TOTAL_S - TUNED_SPLIT2_SLABS_S - TUNED_REST_S   # 0.023 s
TUNED_Q_PER_SLAB_S = 0.478 - TUNED_Q_S / 2     # the slower slab's excess over half
TUNED_Q_PLANES = 129                           # the half grid's z planes 0-128

# RECON-3D-MC by the NUFFT (128^3, koosh 2^20 samples per coil, 8 coils, 20 CG iterations,
# SENSE). H200 2026-12-02 11:36 UTC, `MRI_BENCH_DEVICES=0,0 build-gpu/benchmarks/bench_recon_gpu
# --benchmark_filter='RECON-3D-MC/nufft' --benchmark_counters_tabular=true`, medians of 5.
MC_ONE_TOTAL_S = 130.4 * MS
MC_FHD_S = 17.4 * MS           # 8 adjoint NUFFTs: not split (method = Nufft runs on the first device)
MC_Q_S = 10.6 * MS             # NUFFT on the doubled grid: not split
MC_FFT_SETUP_S = 0.7 * MS
MC_CG_S = 79.4 * MS            # 20 iterations: 3.97 ms each
MC_TRANSFER_S = 20.2 * MS      # coil samples 64 MB, maps 64 MB, trajectory: up to the first device
MC_SETUP_S = 0.7 * MS
MC_ITERATIONS = 20
MC_COILS = 8
MC_CG_ITER_S = MC_CG_S / MC_ITERATIONS
MC_UNSPLIT_S = MC_ONE_TOTAL_S - MC_CG_S        # 51.0 ms: every phase but CG (the 1.4 ms the
                                               # counters do not name included)
# Same call, devices = {0, 0} (two entries on the one GPU, concurrently; peer-copy exchange):
MC_SPLIT2_TOTAL_S = 130.8 * MS
MC_SPLIT2_CG_ITER_S = 3.80 * MS
MC_SPLIT2_EXCHANGE_ITER_S = 7.3 * MS / MC_ITERATIONS  # 0.36 ms: peer copies on one GPU + the wait
MC_SPLIT_SETUP_S = 1.9 * MS                    # the split's setup for one further entry
# One application of the 8-coil SENSE normal (the coil sums CG runs once per iteration):
# H200 2026-12-01 19:44 UTC, `bench_recon_gpu --benchmark_filter='sense-apply'`, CUDA events,
# median of 3 x 20 (docs/sense.md): 3.83 ms, the pruned one-coil transforms coil after coil.
MC_COIL_SUMS_ITER_S = 3.83 * MS
MC_CG_VECTOR_ITER_S = MC_CG_ITER_S - MC_COIL_SUMS_ITER_S   # 0.14 ms: CG's vector work, not split
MC_IMAGE_BYTES = 128 ** 3 * 8  # one 128^3 complex float image: 16.8 MB

# 64-slice MPI batch: 2-core AMD EPYC VM, Open MPI 4.1.4, 2026-12-01 22:55-23:14 UTC, shared
# (load 5-9), best of 3: `RANKS="1 2 3 4" RUNS=3 tools/dev/bench-mpi.sh build-cpu`, one OpenMP
# thread per rank (docs/history.md, "Scaling (history)": "Figures: the 64-slice batch").
BATCH_SLICES = 64
BATCH_ONE_RANK_S = 68.82       # 1 rank (no mpirun), wall
BATCH_TWO_RANK_S = 36.74       # 2 ranks, wall (1.87x)
BATCH_SLICE_S = 30.94 / 32     # 0.967 s: rank 1's 32 slices (Q loaded from the cache), 2-rank run
BATCH_READ_S = 3.47            # rank 0 read the 584 MB file by 3.47 s (2-rank run; 5.13 s alone)
BATCH_Q_WAIT_HOST0_S = 4.10    # rank 1's first data: its slices waited for slice 0's Q, which ran
                               # on rank 0's core beside the reading
BATCH_MPIRUN_START_S = 0.6     # mpirun's start (docs/scaling.md)
BATCH_END_S = BATCH_TWO_RANK_S - BATCH_MPIRUN_START_S - 35.05  # 1.09 s: rank 1's last slice done
                               # at 35.05 s; the gather, the 16 MB NIfTI, MPI_Finalize
BATCH_ONE_RANK_FIRST_DATA_S = 0.36   # 1-rank run: its first item's data in
BATCH_ONE_RANK_END_S = BATCH_ONE_RANK_S - 67.48  # 1.34 s: its last slice done at 67.48 s
BATCH_ITEM_BYTES = 584 * MB / BATCH_SLICES   # 9.1 MB of samples per slice
BATCH_IMAGE_BYTES = 256 ** 2 * 8             # one slice's image back to rank 0

# ------------------------------------------------------------------------------------------------
# ASSUMED (not measured here: no two-GPU machine and no second host was lent).
# ------------------------------------------------------------------------------------------------

# NVLink 4 on an H200 HGX board (NVSwitch: every GPU one hop from every other): NVIDIA's published
# 900 GB/s bidirectional per GPU, 450 GB/s per direction. NCCL's bus bandwidth for large messages
# typically reaches 70-80% of that without NVLink SHARP / multicast (which stays off here:
# NCCL_NVLS_ENABLE=0); ASSUMED 75%.
NVLINK_PER_DIRECTION_BPS = 450 * GB
NVLINK_EFFICIENCY = 0.75
NVLINK_BUS_BPS = NVLINK_PER_DIRECTION_BPS * NVLINK_EFFICIENCY   # 337.5 GB/s
NVLINK_LATENCY_S = 20 * US     # per collective (the usual 10-30 us of an NCCL call), ASSUMED 20 us
# InfiniBand NDR, 400 Gb/s = 50 GB/s per direction per host link; ASSUMED one link per host
# (HGX H200 hosts often have one NDR NIC per GPU: with rail-optimised NCCL that divides the
# inter-host time by up to 8); ASSUMED 80% of it reached, 30 us per collective.
IB_LINK_BPS = 50 * GB
IB_EFFICIENCY = 0.80
IB_BUS_BPS = IB_LINK_BPS * IB_EFFICIENCY                       # 40 GB/s
IB_LATENCY_S = 30 * US
# NCCL's broadcast and reduce are pipelined (ring / chain): each GPU's link carries the message
# once, so a collective costs latency + bytes / bus bandwidth whatever N (nccl-tests: busbw =
# algbw for both). ASSUMED; the ring's per-hop latency (~1-5 us) is folded into the constant.

# The exact split's per-sample coefficients and its planes, peer-copied over NVLink (not through
# the host): F^H D k (3 floats) and weighted data (complex float), Q k and weight: 36 bytes per
# sample to each further device, from the first device's links; the F^H D planes back.
EXACT_SAMPLES = 2 ** 20
EXACT_COEFF_BYTES_PER_DEVICE = EXACT_SAMPLES * (12 + 8 + 12 + 4)
EXACT_IMAGE_BYTES = 128 ** 3 * 8

# Large 3D multi-coil (issue 16's 256^3, 32 coils), EXTRAPOLATED from RECON-3D-MC, not measured:
# a coil's Toeplitz application on the 512^3 padded grid costs 8 x (27/24) of the 256^3 one (FFT
# work n log n), CG's vector work 8x (memory bound), the exchanged image 8x.
BIG_COILS = 32
BIG_COIL_ITER_S = MC_COIL_SUMS_ITER_S / MC_COILS * 8 * 27 / 24   # 4.3 ms per coil
BIG_CG_VECTOR_ITER_S = MC_CG_VECTOR_ITER_S * 8
BIG_IMAGE_BYTES = 256 ** 3 * 8  # 134 MB

# The batch across hosts: hosts like the measured VM (2 cores: 2 ranks of one thread each).
# ASSUMED: a host other than rank 0's gets its Q from its own leader (one Q per host), whose first
# slice with Q takes ~1.3 s (docs/history.md, "Scaling (history)": slice 0 "ends at 4.1 s instead
# of ~1.3 s" without the reading on its core); the file is read at a steady rate (item i arrives at (i+1)/64 of the
# read); items and images cross hosts over one NDR link each.
BATCH_RANKS_PER_HOST = 2
BATCH_LEADER_SLICE_S = 1.3
# "Fixed" variant (not built): host 0's leader not slowed by the reading (followers released when
# Q is stored, the reading off its core), so its Q is ready at BATCH_LEADER_SLICE_S as on the other
# hosts; its speed-up is against its own one-rank time (the same change helps one rank too:
# 0.36 + 1.3 + 63 x 0.967 + 1.34 = 63.9 s).
BATCH_FIXED_Q_WAIT_S = BATCH_LEADER_SLICE_S

TARGET_EXACT_2 = 1.9
TARGET_MC_2 = 1.6
TARGET_BATCH_2 = 1.8
TARGET_EXCHANGE_SHARE = 0.15


def collective_s(nbytes, n, bus_bps, latency_s):
    """One broadcast or reduce of nbytes over n devices (none for one device)."""
    return 0.0 if n == 1 else latency_s + nbytes / bus_bps


def slab_fraction(units, n):
    """The largest share of `units` (planes, tiles, coils) one of n devices gets, split as even as
    can be."""
    return math.ceil(units / n) / units


# RECON-3D exact: F^H D and Q split by voxel slabs; CG (one coil), transfers, setup unsplit.
def exact_time(n, fixed_s=EXACT_SPLIT_FIXED_S):
    """(seconds, communication seconds). `fixed_s`: what the split adds that does not divide (as
    built: the measured 0.054 s, charged in full; 0 for the bound without it)."""
    if n == 1:
        return EXACT_ONE_TOTAL_S, 0.0
    fhd = EXACT_FHD_S * slab_fraction(EXACT_FHD_PLANES, n)
    q = EXACT_Q_S * slab_fraction(EXACT_Q_TILES, n) + EXACT_Q_PER_SLAB_S
    comm = ((n - 1) * EXACT_COEFF_BYTES_PER_DEVICE + EXACT_IMAGE_BYTES * (n - 1) / n) / NVLINK_BUS_BPS
    return fhd + q + EXACT_REST_S + fixed_s + comm, comm


def tuned_time(n):
    if n == 1:
        return TUNED_ONE_TOTAL_S, 0.0
    fhd = TUNED_FHD_S * slab_fraction(EXACT_FHD_PLANES, n)
    q = TUNED_Q_S * slab_fraction(TUNED_Q_PLANES, n) + TUNED_Q_PER_SLAB_S
    comm = ((n - 1) * EXACT_COEFF_BYTES_PER_DEVICE + 2 * EXACT_IMAGE_BYTES * (n - 1) / n) / NVLINK_BUS_BPS
    return fhd + q + TUNED_REST_S + TUNED_SPLIT_FIXED_S + comm, comm


# RECON-3D-MC (NUFFT): CG's coil sums split by coils; per iteration a broadcast of the iterate and
# a reduce of the partial sums; F^H D, Q, transfers and CG's vector work on the first device.
def mc_iteration(n, coils=MC_COILS, coil_s=MC_COIL_SUMS_ITER_S / MC_COILS,
                 vector_s=MC_CG_VECTOR_ITER_S, image_bytes=MC_IMAGE_BYTES,
                 bus_bps=NVLINK_BUS_BPS, latency_s=NVLINK_LATENCY_S):
    """(CG iteration seconds, of which the exchange) on n devices."""
    exchange = 2 * collective_s(image_bytes, n, bus_bps, latency_s)
    return vector_s + math.ceil(coils / n) * coil_s + exchange, exchange


def mc_time(n, split_fhd_and_uploads=False, **fabric):
    """(seconds, exchange seconds over all iterations). split_fhd_and_uploads: the next cut (not
    built): F^H D's adjoint NUFFTs and the coils' uploads (samples and maps) by coils as well."""
    iteration, exchange = mc_iteration(n, **fabric)
    unsplit = MC_UNSPLIT_S
    if split_fhd_and_uploads and n > 1:
        per_coil = math.ceil(MC_COILS / n) / MC_COILS
        unsplit = MC_UNSPLIT_S - (MC_FHD_S + MC_TRANSFER_S) * (1 - per_coil)
    setup = MC_SPLIT_SETUP_S * (n - 1)
    return unsplit + setup + MC_ITERATIONS * iteration, MC_ITERATIONS * exchange


# The 64-slice MPI batch: item i to rank i mod R, rank 0 reads the file and sends the items in
# order, one Q per host (its leader computes it, the host's other items wait for it).
def batch_time(ranks, q_wait_host0_s=BATCH_Q_WAIT_HOST0_S):
    """(wall seconds, seconds of the critical rank not spent on its own slices)."""
    if ranks == 1:
        if q_wait_host0_s == BATCH_Q_WAIT_HOST0_S:
            wall = BATCH_ONE_RANK_S  # measured
        else:
            wall = (BATCH_ONE_RANK_FIRST_DATA_S + q_wait_host0_s + (BATCH_SLICES - 1) * BATCH_SLICE_S
                    + BATCH_ONE_RANK_END_S)
        return wall, wall - BATCH_SLICES * BATCH_SLICE_S
    hosts = math.ceil(ranks / BATCH_RANKS_PER_HOST)
    remote = hosts > 1

    def arrival(item):
        t = BATCH_READ_S * (item + 1) / BATCH_SLICES
        if remote and item % ranks // BATCH_RANKS_PER_HOST != 0:
            t += BATCH_ITEM_BYTES / IB_BUS_BPS + IB_LATENCY_S
        return t

    q_ready = {}
    for h in range(hosts):
        leader = h * BATCH_RANKS_PER_HOST  # the host's first item (ranks 2h, 2h + 1)
        if leader >= BATCH_SLICES:
            continue
        q_ready[h] = q_wait_host0_s if h == 0 else arrival(leader) + BATCH_LEADER_SLICE_S
    finish, critical = 0.0, None
    for r in range(ranks):
        items = list(range(r, BATCH_SLICES, ranks))
        if not items:
            continue
        h = r // BATCH_RANKS_PER_HOST
        t = 0.0
        for j, item in enumerate(items):
            leader = item == h * BATCH_RANKS_PER_HOST
            if leader:
                t = q_ready[h]  # the leader's first slice ends when its Q is stored
                continue
            t = max(t, arrival(item), q_ready[h]) + BATCH_SLICE_S
        if t > finish:
            finish, critical = t, len(items)
    gather = BATCH_SLICES * BATCH_IMAGE_BYTES / IB_BUS_BPS if remote else 0.0
    wall = BATCH_MPIRUN_START_S + finish + gather + BATCH_END_S
    return wall, wall - critical * BATCH_SLICE_S


def crossing(xs, ys, level):
    """The first x at which y exceeds level, or None."""
    return next((x for x, y in zip(xs, ys) if y > level), None)



def finish_panel(ax, xlabel, ylabel, title, xticks, ymax):
    """Labels, ticks, range, grid and legend: what every panel of the GPU figures shares."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.set_xticks(xticks)
    ax.set_ylim(0, ymax)
    ax.grid(True, linewidth=0.3)
    ax.legend(fontsize=7, loc="upper left")

def main():
    png = sys.argv[1] if len(sys.argv) > 1 else "docs/scaling_model.png"
    out_csv = sys.argv[2] if len(sys.argv) > 2 else "docs/data/scaling_model.csv"
    gpus = list(range(1, 9))
    rows = []

    def add(case, variant, unit, n, seconds, base, comm_s=None, share=None, serial_s=None):
        rows.append({"case": case, "variant": variant, "unit": unit, "n": n,
                     "seconds": f"{seconds:.6f}", "speedup": f"{base / seconds:.3f}",
                     "comm_seconds": "" if comm_s is None else f"{comm_s:.6f}",
                     "not_own_slices_seconds": "" if serial_s is None else f"{serial_s:.6f}",
                     "exchange_share_of_cg_iteration": "" if share is None else f"{share:.4f}"})
        return base / seconds

    curves = {}
    for key, case, variant, fn in [
            ("exact", "RECON-3D exact", "as built (split's fixed 0.054 s charged in full)", exact_time),
            ("exact_nofixed", "RECON-3D exact",
             "without the split's fixed cost (spectrum kept on the device, setups overlapped)",
             lambda n: exact_time(n, fixed_s=0.0)),
            ("tuned", "RECON-3D exact, Q by Tuned", "as built", tuned_time),
            ("mc", "RECON-3D-MC NUFFT", "as built (CG's coil sums split)", mc_time),
            ("mc_next", "RECON-3D-MC NUFFT", "F^H D and the coil uploads split by coils too (not built)",
             lambda n: mc_time(n, split_fhd_and_uploads=True))]:
        base = fn(1)[0]
        curves[key] = []
        for n in gpus:
            s, c = fn(n)
            share = None
            if key.startswith("mc"):
                it, ex = mc_iteration(n)
                share = ex / it
            curves[key].append(add(case, variant, "gpus_nvlink", n, s, base, c, share))

    shares = {}
    for key, label, kwargs in [
            ("mc_nvlink", "128^3, 8 coils: GPUs of one host (NVLink)", {}),
            ("mc_ib", "128^3, 8 coils: one GPU per host (one NDR link each)",
             {"bus_bps": IB_BUS_BPS, "latency_s": IB_LATENCY_S}),
            ("big_nvlink", "256^3, 32 coils (extrapolated): GPUs of one host",
             {"coils": BIG_COILS, "coil_s": BIG_COIL_ITER_S, "vector_s": BIG_CG_VECTOR_ITER_S,
              "image_bytes": BIG_IMAGE_BYTES}),
            ("big_ib", "256^3, 32 coils (extrapolated): one GPU per host",
             {"coils": BIG_COILS, "coil_s": BIG_COIL_ITER_S, "vector_s": BIG_CG_VECTOR_ITER_S,
              "image_bytes": BIG_IMAGE_BYTES, "bus_bps": IB_BUS_BPS, "latency_s": IB_LATENCY_S})]:
        shares[key] = (label, [])
        base = mc_iteration(1, **kwargs)[0]
        for n in gpus:
            it, ex = mc_iteration(n, **kwargs)
            shares[key][1].append(ex / it)
            add("CG iteration " + label.split(":")[0], label.split(": ")[1], "devices", n, it, base, ex, ex / it)

    ranks = [1, 2, 4, 8, 16, 32, 64]
    batch = {"built": [], "fixed": []}
    for n in ranks:
        for key, variant, wait in [("built", "as measured (Q wait 4.1 s on rank 0's host)", BATCH_Q_WAIT_HOST0_S),
                                   ("fixed", "host 0's Q ready at 1.3 s (not built; against its own 1 rank)",
                                    BATCH_FIXED_Q_WAIT_S)]:
            wall, serial = batch_time(n, wait)
            base = batch_time(1, wait)[0]
            comm = 0.0 if n <= BATCH_RANKS_PER_HOST else (
                BATCH_ITEM_BYTES + BATCH_IMAGE_BYTES) * BATCH_SLICES / IB_BUS_BPS
            batch[key].append((add("64-slice MPI batch", variant, "ranks_1_thread", n, wall, base,
                                   comm, serial_s=serial), serial / wall))

    with open(out_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    # The figures docs/scaling.md quotes.
    for key in curves:
        c = curves[key]
        print(f"{key:14s} speed-up at 2: {c[1]:.2f}x  at 4: {c[3]:.2f}x  at 8: {c[7]:.2f}x")
    for key, (label, ys) in shares.items():
        print(f"{key:11s} exchange share: " + " ".join(f"{n}:{y:.1%}" for n, y in zip(gpus, ys))
              + f"  >15% at {crossing(gpus, ys, 0.15)}, >50% at {crossing(gpus, ys, 0.50)}")
    for key, pts in batch.items():
        print(f"batch {key:5s}: " + " ".join(f"{n}:{s:.2f}x({f:.0%} serial)" for n, (s, f) in zip(ranks, pts)))
    print(f"exact split fixed {EXACT_SPLIT_FIXED_S:.4f} s, Q per slab {EXACT_Q_PER_SLAB_S:.4f} s, "
          f"tuned fixed {TUNED_SPLIT_FIXED_S:.4f} s; MC unsplit {MC_UNSPLIT_S / MS:.1f} ms, "
          f"CG vector {MC_CG_VECTOR_ITER_S / MS:.2f} ms, exchange/iter NVLink {mc_iteration(2)[1] / MS:.3f} ms, "
          f"IB {mc_iteration(2, bus_bps=IB_BUS_BPS, latency_s=IB_LATENCY_S)[1] / MS:.3f} ms; "
          f"batch end {BATCH_END_S:.2f} s")

    fig, axes = plt.subplots(1, 3, figsize=(16, 5.2))
    ax = axes[0]
    ax.plot(gpus, gpus, ":", color="grey", label="ideal")
    ax.plot(gpus, curves["exact"], "-o", color="tab:red", markersize=4,
            label="RECON-3D exact, as built (split's 0.054 s fixed)")
    ax.plot(gpus, curves["exact_nofixed"], "--", color="tab:red",
            label="RECON-3D exact, without the split's fixed cost")
    ax.fill_between(gpus, curves["exact"], curves["exact_nofixed"], color="tab:red", alpha=0.12)
    ax.plot(gpus, curves["tuned"], "-.", color="tab:brown", linewidth=1, label="RECON-3D exact, Q by Tuned")
    ax.plot(gpus, curves["mc"], "-s", color="tab:blue", markersize=4,
            label="RECON-3D-MC NUFFT, as built (CG's coil sums split)")
    ax.plot(gpus, curves["mc_next"], "--", color="tab:blue",
            label="RECON-3D-MC, + F^H D and uploads by coils (not built)")
    ax.plot([2], [TARGET_EXACT_2], "*", color="tab:red", markersize=13, label="target at 2 GPUs: 1.9x (exact)")
    ax.plot([2], [TARGET_MC_2], "*", color="tab:blue", markersize=13, label="target at 2 GPUs: 1.6x (MC)")
    finish_panel(ax, "GPUs of one host (NVLink 4, ASSUMED 337 GB/s bus bandwidth)",
                 "speed-up over one GPU (modelled)", "Strong scaling, 1-8 GPUs: modelled from one-H200 phases",
                 gpus, 8.3)

    ax = axes[1]
    styles = {"mc_nvlink": ("-o", "tab:blue"), "mc_ib": ("--o", "tab:blue"),
              "big_nvlink": ("-s", "tab:green"), "big_ib": ("--s", "tab:green")}
    for key, (label, ys) in shares.items():
        style, colour = styles[key]
        ax.plot(gpus, [100 * y for y in ys], style, color=colour, markersize=4, label=label)
    ax.plot([2], [100 * MC_SPLIT2_EXCHANGE_ITER_S / MC_SPLIT2_CG_ITER_S], "x", color="black", markersize=8,
            label="MEASURED on ONE GPU, {0, 0}: peer copies + wait (9.5%)")
    ax.axhline(15, color="tab:orange", linewidth=1, label="15% (issue's bound at 2 GPUs)")
    ax.axhline(50, color="tab:red", linewidth=1, label="50%: communication dominates")
    finish_panel(ax, "devices (GPUs of one host, or hosts of one GPU)", "exchange's share of a CG iteration (%)",
                 "SENSE coil split: broadcast + reduce per CG iteration", gpus, 100)

    ax = axes[2]
    ax.plot(ranks, ranks, ":", color="grey", label="ideal")
    ax.plot(ranks, [s for s, _ in batch["built"]], "-o", color="tab:purple", markersize=4,
            label="modelled, as measured (Q wait 4.1 s on host 0)")
    ax.plot(ranks, [s for s, _ in batch["fixed"]], "--o", color="tab:purple", markersize=4,
            label="modelled, host 0's Q at 1.3 s (not built; vs its own 1 rank)")
    ax.plot([2], [BATCH_ONE_RANK_S / BATCH_TWO_RANK_S], "x", color="black", markersize=9,
            label="MEASURED, 2 ranks: 1.87x (calibrates the model)")
    ax.plot([2], [TARGET_BATCH_2], "*", color="tab:purple", markersize=13, label="target at 2 ranks: 1.8x")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(ranks)
    ax.set_xticklabels([f"{r}\n({math.ceil(r / BATCH_RANKS_PER_HOST)} h)" for r in ranks])
    ax.set_yticks(ranks)
    ax.set_yticklabels([str(r) for r in ranks])
    ax.set_xlabel("ranks, one thread each (hosts of 2 cores, one NDR link each)")
    ax.set_ylabel("speed-up over one rank")
    ax.set_title("64-slice batch (CPU, 1 s a slice) over MPI ranks", fontsize=10)
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=7, loc="upper left")

    fig.suptitle("Issue 16 scaling MODEL: phases measured on one H200 and the 2-core CPU VM (2026-12-01/02); "
                 "NVLink / InfiniBand figures ASSUMED, nothing measured on 2 GPUs or 2 hosts", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print("wrote", png, "and", out_csv)


if __name__ == "__main__":
    main()
