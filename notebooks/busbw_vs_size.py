#!/usr/bin/env python3
"""Bus bandwidth against message size from one or more Railyard collectives.csv files (one line per file and op).

collectives.csv is RFC 4180 CSV (a label may hold a comma, quoted): read it with the csv module, never by splitting
lines on commas.

  python3 notebooks/busbw_vs_size.py out/default/collectives.csv [more.csv ...] --png busbw.png
  python3 notebooks/busbw_vs_size.py out/default/collectives.csv --text     # the numbers only
"""
import argparse
import csv
import sys
from collections import defaultdict

COLUMNS = ("op", "label", "size_bytes", "busbw_GBps")


def load(path):
    """Per op, the (size in bytes, busbw in GB/s, label) of every row."""
    series = defaultdict(list)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            sys.exit(f"{path}: no column(s) {', '.join(missing)}: is it a collectives.csv written by railyard run?")
        for row in reader:
            if None in row or None in row.values():
                sys.exit(f"{path}:{reader.line_num}: the row does not have one field per column")
            series[row["op"]].append((float(row["size_bytes"]), float(row["busbw_GBps"]), row["label"]))
    return series


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="collectives.csv files written by railyard run")
    ap.add_argument("--png", default="busbw.png", help="output image")
    ap.add_argument("--text", action="store_true", help="print the numbers only, no plot")
    args = ap.parse_args()
    runs = {path: load(path) for path in args.csv}
    for path, series in runs.items():
        for op, points in sorted(series.items()):
            for size, busbw, label in sorted(points):
                print(f"{path}: {op:<15} {size:>14.0f} B  busbw {busbw:9.2f} GB/s  {label}")
    if args.text:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is missing (Debian: apt-get install python3-matplotlib): printed the numbers above "
                 "instead of plotting them")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for path, series in runs.items():
        for op, points in sorted(series.items()):
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
