#!/usr/bin/env python3
"""Link utilisation over time as a heatmap, from one `railyard run` output folder of the fluid backend.

Reads only the folder's links.csv and summary.json (a collectives run, or a workload replayed with
`communication: flows` and `network.outputs.links: true`) and draws one row per network link (NIC ports and switch
links; NVLink and PCIe are the node's), the most used on top, one column per sampling interval, coloured by
utilisation (bytes / (capacity x interval)); idle intervals are 0. Without matplotlib (Debian: python3-matplotlib) it
says so and prints the rows as text.

  python3 notebooks/link_heatmap.py out/ring_ecmp_1qp                 # writes out/ring_ecmp_1qp-heatmap.png
  python3 notebooks/link_heatmap.py out/alltoall_fat_tree_2to1 --top 64 --png a2a.png
  python3 notebooks/link_heatmap.py out/dcqcn_on --text               # numbers only
"""
import argparse
import csv
import json
import math
import os
import sys
from collections import defaultdict


def load(folder):
    """The sampling interval, and per network link: kind, capacity, total bytes and {sample index: utilisation}."""
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    interval = summary.get("network", {}).get("sample_interval_s")
    links = {}
    with open(os.path.join(folder, "links.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    if interval is None:  # outputs older than network.sample_interval_s: the most common interval
        counts = defaultdict(int)
        for row in rows:
            counts[float(row["interval_s"])] += 1
        interval = max(counts, key=lambda k: (counts[k], k)) if counts else 1.0
    for row in rows:
        if row["kind"] in ("nvlink", "pcie"):
            continue
        link = links.setdefault(row["name"], {"kind": row["kind"], "capacity": float(row["capacity_Bps"]),
                                              "bytes": 0.0, "util": {}})
        link["bytes"] += float(row["bytes"])
        # Samples are due on the grid k x interval, each up to one queue step late (docs/congestion.md).
        link["util"][int(math.floor(float(row["time_s"]) / interval + 1e-9))] = float(row["utilisation"])
    return summary, interval, links


def ranked(links, top):
    """The `top` most used links (bytes over capacity), ties by name."""
    return sorted(links, key=lambda n: (-links[n]["bytes"] / links[n]["capacity"], n))[:top]


def matrix(links, names):
    first = min(min(links[n]["util"]) for n in names)
    last = max(max(links[n]["util"]) for n in names)
    return first, [[links[n]["util"].get(i, 0.0) for i in range(first, last + 1)] for n in names]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="a railyard run output folder (fluid backend, links.csv recorded)")
    ap.add_argument("--top", type=int, default=32, help="how many of the most used network links (rows)")
    ap.add_argument("--png", help="output image (default: FOLDER-heatmap.png, beside the folder)")
    ap.add_argument("--text", action="store_true", help="print the numbers only, no plot")
    args = ap.parse_args()

    for name in ("summary.json", "links.csv"):
        if not os.path.exists(os.path.join(args.folder, name)):
            sys.exit(f"{os.path.join(args.folder, name)} is missing: run a scenario with `network: {{backend: fluid}}` "
                     f"(a workload run records links.csv with `network.outputs.links: true`)")
    summary, interval, links = load(args.folder)
    if not links:
        sys.exit(f"{args.folder}: links.csv has no NIC or switch link with traffic")
    names = ranked(links, args.top)
    first, rows = matrix(links, names)
    print(f"{args.folder}: {len(names)} of {len(links)} network links, {len(rows[0])} intervals of "
          f"{interval * 1e6:g} us from {first * interval * 1e6:g} us")
    for name, row in zip(names, rows):
        busy = sum(1 for u in row if u > 0)
        print(f"  {name:<22} {links[name]['kind']:<11} mean {sum(row) / len(row):5.2f}  max {max(row):5.2f}  "
              f"busy {busy}/{len(row)} intervals")
    if args.text:
        return
    try:
        import matplotlib
    except ImportError:
        print("python3-matplotlib is not installed (Debian: apt-get install python3-matplotlib): numbers only")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.22 * len(names)))
    t0, t1 = first * interval * 1e6, (first + len(rows[0])) * interval * 1e6
    image = ax.imshow(rows, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=1,
                      extent=(t0, t1, len(names) - 0.5, -0.5))
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=6)
    ax.set_xlabel("simulated time (us)")
    fig.colorbar(image, ax=ax, label="utilisation")
    net = summary.get("network", {})
    fig.suptitle(f"{summary.get('scenario')}: link utilisation (cc {net.get('cc')}, "
                 f"ecmp {net.get('ecmp')} x{net.get('qps_per_connection')} QP)", fontsize=10)
    fig.tight_layout()
    png = args.png or os.path.normpath(args.folder) + "-heatmap.png"
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
