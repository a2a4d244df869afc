#!/usr/bin/env python3
"""Congestion study plots from one `railyard run` output folder of the fluid backend.

Reads only the folder's links.csv, flows.csv and summary.json and draws:
  - egress queue depth over time of the chosen links (default: the deepest queues, else the network links
    with the most flows at once),
  - utilisation over time of the same links,
  - pause time and ECN marks per sampling interval (when the run has any),
  - the CDF of flow completion times (flows.csv, one line per destination GPU group or all flows).
Without matplotlib (Debian: python3-matplotlib) it says so and prints the same numbers as text.

  python3 notebooks/congestion.py out/incast                       # writes out/incast-congestion.png
  python3 notebooks/congestion.py out/dcqcn_off --links leaf0->nic0.0 spine0->leaf0 --png off.png
  python3 notebooks/congestion.py out/dcqcn_on --text              # numbers only
"""
import argparse
import csv
import json
import math
import os
import sys
from collections import defaultdict


def load_links(path, interval=None):
    """Per link name: kind, capacity and {sample index: row}; plus the sampling interval.

    Samples lie on the grid k x interval (summary.json's network.sample_interval_s), each up to one queue step late
    (docs/congestion.md), so sample k is the row whose time_s lies in [k x interval, (k + 1) x interval). Outputs
    without sample_interval_s (older runs) give the most common interval_s."""
    rows = []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if interval is None:
        counts = defaultdict(int)
        for row in rows:
            counts[float(row["interval_s"])] += 1
        interval = max(counts, key=lambda k: (counts[k], k)) if counts else None
    links = {}
    for row in rows:
        name = row["name"]
        link = links.setdefault(name, {"kind": row["kind"], "capacity": float(row["capacity_Bps"]), "samples": {}})
        t = float(row["time_s"])
        link["samples"][int(math.floor(t / interval + 1e-9))] = {
                "bytes": float(row["bytes"]),
                "utilisation": float(row["utilisation"]),
                "queue": float(row["max_queue_bytes"]),
                "marks": float(row["ecn_marks"]),
                "pause": float(row["pause_s"]),
                "flows": int(row["max_flows"]),
            }
    return links, interval


def load_flows(path):
    flows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            flows.append({"src": int(row["src"]), "dst": int(row["dst"]), "bytes": float(row["bytes"]),
                          "start": float(row["start_s"]), "fct": float(row["fct_s"])})
    return flows


def totals(link):
    s = link["samples"].values()
    return {"bytes": sum(x["bytes"] for x in s), "max_util": max((x["utilisation"] for x in s), default=0.0),
            "max_queue": max((x["queue"] for x in s), default=0.0), "marks": sum(x["marks"] for x in s),
            "pause": sum(x["pause"] for x in s), "max_flows": max((x["flows"] for x in s), default=0)}


def choose_links(links, wanted, count):
    if wanted:
        missing = [w for w in wanted if w not in links]
        if missing:
            sys.exit(f"no samples for link(s) {', '.join(missing)} in links.csv (only links with activity are listed)")
        return wanted
    tot = {name: totals(link) for name, link in links.items()}
    queued = sorted((n for n in tot if tot[n]["max_queue"] > 0), key=lambda n: (-tot[n]["max_queue"], n))
    if queued:
        return queued[:count]
    # No queues (max-min sharing): the network links that carried the most flows at once (ECMP collisions), then the
    # most bytes. NVLink and PCIe only when nothing crossed a switch.
    fabric = [n for n in tot if links[n]["kind"] not in ("nvlink", "pcie")] or list(tot)
    return sorted(fabric, key=lambda n: (-tot[n]["max_flows"], -tot[n]["bytes"], n))[:count]


def series(link, key, first, last):
    """The link's value per sampling interval from first to last; intervals without activity are 0."""
    return [link["samples"].get(i, {}).get(key, 0.0) for i in range(first, last + 1)]


def percentile(sorted_values, p):
    """Nearest rank, as summary.json's fct_s."""
    if not sorted_values:
        return 0.0
    rank = math.ceil(p * len(sorted_values))
    return sorted_values[min(len(sorted_values) - 1, max(rank, 1) - 1)]


def flow_groups(flows):
    """FCTs per destination GPU when there are few destinations (an incast and its victims), else all together."""
    by_dst = defaultdict(list)
    for f in flows:
        by_dst[f["dst"]].append(f["fct"])
    if 1 < len(by_dst) <= 6:
        return {f"to GPU {d}": sorted(v) for d, v in sorted(by_dst.items())}
    return {"all flows": sorted(f["fct"] for f in flows)}


def print_text(folder, summary, links, chosen, flows):
    net = summary.get("network", {})
    print(f"{folder}: scenario {summary.get('scenario')}, cc {net.get('cc')}, pfc {'on' if net.get('pfc') else 'off'}, "
          f"ecmp {net.get('ecmp')}, {net.get('qps_per_connection')} QP per connection")
    for c in summary.get("collectives", []):
        print(f"  {c['op']} '{c['label']}': {c['time_s'] * 1e6:.1f} us")
    print(f"  max queue {net.get('max_queue_bytes', 0) / 1e3:.1f} kB at {net.get('max_queue_link') or '-'}, "
          f"pause {net.get('pause_time_s', 0) * 1e6:.1f} us in {net.get('pause_events', 0)} events, "
          f"ECN marks {net.get('ecn_marks', 0):.0f}, CNPs {net.get('cnps', 0)}, "
          f"overflow {net.get('overflow_bytes', 0)} B")
    print(f"  {'link':<22} {'kind':<11} {'MB':>9} {'max util':>8} {'max queue kB':>12} {'marks':>8} {'pause us':>9}"
          f" {'max flows':>9}")
    for name in chosen:
        t = totals(links[name])
        print(f"  {name:<22} {links[name]['kind']:<11} {t['bytes'] / 1e6:9.2f} {t['max_util']:8.2f} "
              f"{t['max_queue'] / 1e3:12.1f} {t['marks']:8.1f} {t['pause'] * 1e6:9.1f} {t['max_flows']:9d}")
    for label, fct in flow_groups(flows).items():
        print(f"  FCT {label}: {len(fct)} flows, p50 {percentile(fct, 0.5) * 1e6:.1f} us, "
              f"p99 {percentile(fct, 0.99) * 1e6:.1f} us, max {fct[-1] * 1e6:.1f} us")


def plot(folder, summary, links, interval, chosen, flows, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = min(min(links[n]["samples"]) for n in chosen)
    last = max(max(links[n]["samples"]) for n in chosen)
    t_us = [i * interval * 1e6 for i in range(first, last + 1)]
    has_cc = any(totals(links[n])["pause"] > 0 or totals(links[n])["marks"] > 0 for n in chosen)
    rows = 4 if has_cc else 3
    fig, axes = plt.subplots(rows, 1, figsize=(8, 2.6 * rows))
    ax_q, ax_u = axes[0], axes[1]
    for name in chosen:
        link = links[name]
        ax_q.step(t_us, [q / 1e3 for q in series(link, "queue", first, last)], where="post", label=name)
        ax_u.step(t_us, series(link, "utilisation", first, last), where="post", label=name)
    ax_q.set_ylabel("egress queue (kB)")
    ax_u.set_ylabel("utilisation")
    ax_u.set_ylim(0, 1.05)
    if has_cc:
        ax_p = axes[2]
        for name in chosen:
            link = links[name]
            ax_p.step(t_us, [p / interval for p in series(link, "pause", first, last)], where="post",
                      label=f"{name}: paused fraction")
        ax_p.set_ylabel("paused fraction")
        ax_p.legend(fontsize=6, loc="upper left")
        marks = [sum(v) for v in zip(*(series(links[n], "marks", first, last) for n in chosen))]
        if any(m > 0 for m in marks):
            ax_m = ax_p.twinx()
            ax_m.step(t_us, marks, where="post", color="black", linestyle=":", label="ECN marks (sum)")
            ax_m.set_ylabel("ECN marks / interval")
            ax_m.legend(fontsize=6, loc="upper right")
    for ax in axes[: rows - 1]:
        ax.set_xlabel("simulated time (us)")
        ax.grid(True, alpha=0.3)
    ax_q.legend(fontsize=7)
    ax_c = axes[rows - 1]
    for label, fct in flow_groups(flows).items():
        n = len(fct)
        # Start from 0 at the first value, so a single flow still draws its step.
        ax_c.step([fct[0] * 1e6] + [v * 1e6 for v in fct], [0.0] + [(i + 1) / n for i in range(n)], where="post",
                  label=f"{label} ({n})")
    ax_c.set_xlabel("flow completion time (us)")
    ax_c.set_ylabel("CDF")
    ax_c.set_ylim(0, 1.02)
    ax_c.grid(True, alpha=0.3)
    ax_c.legend(fontsize=7)
    net = summary.get("network", {})
    fig.suptitle(f"{summary.get('scenario')}: cc {net.get('cc')}, pfc {'on' if net.get('pfc') else 'off'}, "
                 f"ecmp {net.get('ecmp')} x{net.get('qps_per_connection')} QP", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="output folder of `railyard run` with network: {backend: fluid}")
    ap.add_argument("--links", nargs="+", help="link names as in links.csv (default: the deepest queues)")
    ap.add_argument("--top", type=int, default=4, help="how many links to pick by default")
    ap.add_argument("--png", help="output image (default: FOLDER-congestion.png, beside the folder: railyard run "
                                  "replaces its output folder as a whole and refuses one holding files it did not "
                                  "write)")
    ap.add_argument("--text", action="store_true", help="print the numbers only, no plot")
    args = ap.parse_args()

    paths = {n: os.path.join(args.folder, n) for n in ("summary.json", "links.csv", "flows.csv")}
    for name, path in paths.items():
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: run a scenario with `network: {{backend: fluid}}` (flows and links "
                     f"are recorded by default while they fit 256 MiB; `outputs: {{flows: true, links: true}}` "
                     f"records them always)")
    with open(paths["summary.json"]) as f:
        summary = json.load(f)
    links, interval = load_links(paths["links.csv"], summary.get("network", {}).get("sample_interval_s"))
    flows = load_flows(paths["flows.csv"])
    if not links or not flows:
        sys.exit(f"{args.folder}: links.csv or flows.csv has no rows")
    chosen = choose_links(links, args.links, args.top)

    print_text(args.folder, summary, links, chosen, flows)
    if args.text:
        return
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("matplotlib is missing (Debian: apt-get install python3-matplotlib): printed the numbers above "
                 "instead of plotting them")
    plot(args.folder, summary, links, interval, chosen, flows,
         args.png or os.path.normpath(args.folder) + "-congestion.png")


if __name__ == "__main__":
    main()
