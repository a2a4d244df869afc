#!/usr/bin/env python3
"""Per system and size band, the errors of bench_nccl_corpus's --csv (one row per simulated point), as the bench
prints them: geomean exp(mean |ln r|) - 1, bias exp(mean ln r) - 1 and the share within 15%, where r is simulated /
measured time (measured / simulated busbw for busbw-only rows). The bands split one node's sizes where RCCL's path
changes: 8 B - 512 B (its cost model: Ring/LL), 1 KiB - 512 KiB (MSCCL LL, or MSCCL++ under -G), 512 KiB - 16 MiB
(MSCCL Simple; MSCCL++ up to 1 MiB under -G), above 16 MiB (the cost model again).

    python3 bands.py bench.csv [--half held_out|fit|all] [--before before.csv]
"""
import argparse
import csv
import math
from collections import defaultdict

BANDS = [("8 B - 512 B", 0, 512), ("1 KiB - 512 KiB", 1024, 512 * 1024 - 1),
         ("512 KiB - 16 MiB", 512 * 1024, 16 << 20), ("> 16 MiB", (16 << 20) + 1, 1 << 62)]


def band(size):
    for name, lo, hi in BANDS:
        if lo <= size <= hi:
            return name
    return "?"


def read(path, half):
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if half != "all" and r["half"] != half:
                continue
            e = float(r["error"])
            out[r["id"]] = (r, math.log(1 + e))
    return out


def stats(logs):
    if not logs:
        return "-"
    n = len(logs)
    geo = math.exp(sum(abs(x) for x in logs) / n) - 1
    bias = math.exp(sum(logs) / n) - 1
    within = sum(1 for x in logs if abs(math.exp(x) - 1) <= 0.15) / n
    return f"{n:3d} {100 * geo:6.1f}% {100 * bias:+6.1f}% {100 * within:4.0f}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--half", default="held_out", choices=["held_out", "fit", "all"])
    ap.add_argument("--before", help="a second csv (an earlier run) shown beside it")
    args = ap.parse_args()
    runs = [("after", read(args.csv, args.half))]
    if args.before:
        runs.insert(0, ("before", read(args.before, args.half)))
    groups = defaultdict(lambda: defaultdict(list))
    for label, rows in runs:
        for r, x in rows.values():
            one = r["nodes"] == "1"
            key = (r["system"], band(int(r["size_bytes"]))) if one else (r["system"], "all sizes")
            groups[key][label].append(x)
            if one and int(r["size_bytes"]) <= (16 << 20):
                groups[("ALL one-node systems", "8 B - 16 MiB")][label].append(x)
                if "azure_ndv5" not in r["system"]:
                    groups[("one node without ndv5 (in-place busbw)", "8 B - 16 MiB")][label].append(x)
            groups[("ALL", "all sizes")][label].append(x)
    head = " | ".join(f"{label:>6}:   n geomean   bias <=15%" for label, _ in runs)
    print(f"{args.half} half\n{'system':<42} {'band':<17} | {head}")
    for key in sorted(groups):
        cells = " | ".join(f"{stats(groups[key][label]):>34}" for label, _ in runs)
        print(f"{key[0]:<42} {key[1]:<17} | {cells}")


if __name__ == "__main__":
    main()
