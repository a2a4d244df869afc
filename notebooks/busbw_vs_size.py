#!/usr/bin/env python3
"""Bus bandwidth against message size from one or more Railyard collectives.csv files (one line per file and op)."""
import argparse
import csv
import sys
from collections import defaultdict


def load(path):
    series = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            series[row["op"]].append((float(row["size_bytes"]), float(row["busbw_GBps"])))
    return series


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("csv", nargs="+", help="collectives.csv files written by railyard run")
    ap.add_argument("--png", default="busbw.png", help="output image")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is missing: apt-get install python3-matplotlib")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for path in args.csv:
        for op, points in sorted(load(path).items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"{path}: {op}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s, nccl-tests definition)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
