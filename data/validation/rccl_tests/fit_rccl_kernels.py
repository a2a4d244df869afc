#!/usr/bin/env python3
"""Fits what RCCL's sources do not give for the kernels RCCL runs on one MI300X node.

Recorded in models/data/rccl_kernels_mi300x.inc: the share of an xGMI link's bandwidth MSCCL's sends reach (LL and
Simple), and MSCCL++ allreduce7's launch and share.

Input: the --csv of bench_nccl_corpus run with the values of rccl_kernels_mi300x.inc in force (the "reference",
read from that file; the first fit ran with shares of 1 and a 5 us launch, and a run with the fitted values gives the
same fit back). Only rows of the fit half are read; a held-out row is never looked at, so nothing here is chosen on
it.

Why a closed form is enough: every kernel here is all-pairs, each step loads every directed xGMI link with the same
bytes and nothing else runs, so the simulator times a call as
    launch + steps x (max(hwLat, path latency) + wire bytes per link per step / (efficiency x link rate))
(tests/cli/test_cli_mi300x.cpp, MscclAllPairsTakesRcclsLatenciesAndTwoEighthsPerLink, checks this form through the
binary). So a row's time at another efficiency e and launch L is
    T(e, L) = T_ref + (L - L_ref) + D x (1 / e - 1 / e_ref),
with D = steps x (bytes / 8) x wire factor / link rate: all_reduce moves an eighth of the buffer to each peer twice,
LL (and MSCCL++'s LL8 packets) put 2 wire bytes per data byte, Simple 1.

Rows used: the fit half's 8-GPU single-node rows of systems whose runs give each GPU its own process (`-g 1`: a
thread issuing for 8 GPUs times the host, not the kernel) and print a time, simulated as MSCCL/LL, MSCCL/Simple or
MSCCL++/LL. Each parameter minimises the sum of squared ln(simulated / measured) over its rows on a grid.

    python3 fit_rccl_kernels.py --csv bench.csv [--points points.csv] [--inc rccl_kernels_mi300x.inc]
"""
import argparse
import csv
import math
import os
import re

LINK_BPS = 46.55e9  # the scenario's xgmi_bandwidth in bench/rccl_corpus_systems.yaml (TransferBench's per-link rate)
WIRE = {"LL": 2.0, "Simple": 1.0}
STEPS = 2  # all_reduce: both phases


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", required=True, help="bench_nccl_corpus --csv output with the reference values in force")
    ap.add_argument("--points", default=os.path.join(here, "points.csv"))
    ap.add_argument("--inc", default=os.path.join(here, "../../../models/data/rccl_kernels_mi300x.inc"),
                    help="the values in force when the csv was made")
    args = ap.parse_args()
    with open(args.inc) as f:
        inc = f.read()

    def value(name):
        return float(re.search(r"\." + name + r"\s*=\s*([0-9.]+)", inc).group(1))

    ref_e = {"MSCCL/LL": value("msccl_link_efficiency_ll"), "MSCCL/Simple": value("msccl_link_efficiency_simple"),
             "MSCCL++/LL": value("mscclpp_link_efficiency_ll")}
    ref_launch_us = value("mscclpp_launch_us")

    flags = {}
    with open(args.points, newline="") as f:
        for p in csv.DictReader(f):
            flags[p["id"]] = p["nccl_tests_flags"]

    rows = {"MSCCL/LL": [], "MSCCL/Simple": [], "MSCCL++/LL": []}
    with open(args.csv, newline="") as f:
        for r in csv.DictReader(f):
            if r["half"] != "fit":
                continue  # the held-out half is never read
            if r["nodes"] != "1" or r["ranks"] != "8" or r["collective"] != "all_reduce" or r["metric"] != "time_us":
                continue
            if r["simulated_algo"] not in rows:
                continue
            words = flags[r["id"]].split()
            if not any(tok == "-g" and nxt == "1" for tok, nxt in zip(words, words[1:])):
                continue
            proto = r["simulated_algo"].split("/")[1]
            d_us = STEPS * int(r["size_bytes"]) / 8 * WIRE[proto] / LINK_BPS * 1e6
            # The row's time with a share of 1 (d_us is the data time at the full link rate).
            algo = r["simulated_algo"]
            t1 = float(r["simulated"]) - d_us * (1 / ref_e[algo] - 1)
            rows[algo].append((r["id"], t1, float(r["measured"]), d_us))

    def sse(points, e, dl):
        return sum(math.log((t + dl + d * (1 / e - 1)) / m) ** 2 for _, t, m, d in points)

    def report(name, points, e, dl):
        errs = [(t + dl + d * (1 / e - 1)) / m - 1 for _, t, m, d in points]
        geo = math.exp(sum(abs(math.log(1 + x)) for x in errs) / len(errs)) - 1
        bias = math.exp(sum(math.log(1 + x) for x in errs) / len(errs)) - 1
        print(f"  {name}: {len(points)} fit rows, geomean error {100 * geo:.1f}%, bias {100 * bias:+.1f}%, "
              f"worst {100 * max(errs, key=abs):+.1f}%")
        print("    rows: " + ", ".join(i for i, *_ in points))

    grid_e = [0.20 + 0.005 * i for i in range(161)]  # 0.20 .. 1.00
    for algo in ("MSCCL/LL", "MSCCL/Simple"):
        pts = rows[algo]
        if not pts:
            print(f"{algo}: no fit rows")
            continue
        e = min(grid_e, key=lambda x: sse(pts, x, 0.0))
        print(f"{algo}: link efficiency {e:.3f} ({e * LINK_BPS / 1e9:.1f} GB/s of {LINK_BPS / 1e9:.2f})")
        report(algo, pts, e, 0.0)
    pts = rows["MSCCL++/LL"]
    if pts:
        grid_l = [0.05 * i for i in range(201)]  # 0 .. 10 us
        best = min(((e, l) for e in grid_e for l in grid_l),
                   key=lambda el: sse(pts, el[0], el[1] - ref_launch_us))
        print(f"MSCCL++/LL: launch {best[1]:.2f} us, link efficiency {best[0]:.3f} "
              f"({best[0] * LINK_BPS / 1e9:.1f} GB/s)")
        report("MSCCL++/LL", pts, best[0], best[1] - ref_launch_us)
    else:
        print("MSCCL++/LL: no fit rows")


if __name__ == "__main__":
    main()
