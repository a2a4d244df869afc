#!/ usr / bin / env python3
"""How much each collective of a training step was slowed by what else was in flight, from one `railyard run` output
folder of a workload replayed with `communication: coupled`.

Reads only the folder's summary.json: its `congestion` block gives, per group kind (tp, pp, dp, ep, cp, other), every
collective call's congestion factor (its time over the same call alone on the fabric) as a histogram, and the factor
over all calls (time / time alone). Draws one bar group per factor bin, one bar per group kind, the share of that
kind's calls in the bin. Without matplotlib (Debian: python3-matplotlib) it says so and prints the numbers.

  python3 notebooks/congestion_factor.py out/llama3_405b_8192_fat_tree      # writes out/...-congestion_factor.png
  python3 notebooks/congestion_factor.py out/llama3_405b_8192_rail --text   # numbers only
"""
import argparse
import json
import os
import sys


def load(folder):
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    if "congestion" not in summary:
        sys.exit(f"{folder}/summary.json has no 'congestion' block: it is written by a workload replayed with "
                 "communication: coupled (replay.communication in the scenario)")
    return summary, summary["congestion"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="a railyard run output folder of a coupled workload replay")
    ap.add_argument("--png", help="output image (default: <folder>-congestion_factor.png)")
    ap.add_argument("--text", action="store_true", help="print the numbers, draw nothing")
    args = ap.parse_args()
    summary, c = load(args.folder)
    bins = c["histogram_bins"]
    groups = c["by_group"]
    if not groups:
        sys.exit(f"{args.folder}: the step ran no collective of more than one rank")
    print(f"{summary['scenario']}: step {summary['step_time_s']:.6f} s, {summary['gpus']} GPUs")
    for name, g in groups.items():
        print(f"  {name:5s} {g['calls']:9d} calls  factor {g['factor']:.4f}  p50 {g['p50']:.4f}  p90 {g['p90']:.4f}  "
              f"p99 {g['p99']:.4f}  max {g['max']:.4f}")
        print("        " + "  ".join(f"{b} {n}" for b, n in zip(bins, g["histogram"]) if n))
    if args.text:
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (Debian: apt-get install python3-matplotlib); printed the numbers instead")
        return
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(groups)
    for i, (name, g) in enumerate(groups.items()):
        share = [100.0 * n / g["calls"] for n in g["histogram"]]
        ax.bar([x + i * width for x in range(len(bins))], share, width,
               label=f"{name}: {g['calls']} calls, factor {g['factor']:.3f}, p99 {g['p99']:.3f}")
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(bins))])
    ax.set_xticklabels(bins, rotation=30, ha="right")
    ax.set_xlabel("congestion factor: call time / same call alone on the fabric")
    ax.set_ylabel("% of the kind's calls")
    ax.set_title(f"{summary['scenario']}: step {summary['step_time_s']:.4f} s on {summary['gpus']} GPUs "
                 f"({summary['cluster_kind']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = args.png or args.folder.rstrip("/") + "-congestion_factor.png"
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
