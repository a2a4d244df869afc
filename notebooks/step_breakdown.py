#!/usr/bin/env python3
"""Where each rank's training-step time went, from one `railyard run` output folder of a `workload:` scenario.

Reads only the folder's breakdown.csv (one row per rank; RFC 4180 CSV) and summary.json, and draws per-rank stacked
bars: compute, exposed communication per group kind (TP, PP, DP, EP, CP, other; only the kinds with any time),
pipeline bubble and idle time. The four parts add up to the step time (sim/README.md, "Workload replay"); the script
checks that against summary.json's step_time_s and says where it does not hold.

  python3 notebooks/step_breakdown.py out/gpt3_175b_1024                 # writes out/gpt3_175b_1024-breakdown.png
  python3 notebooks/step_breakdown.py out/llama3_70b_1024 --png l.png
  python3 notebooks/step_breakdown.py out/gpt3_175b_1024 --text          # numbers only
"""
import argparse
import csv
import json
import os
import sys

KINDS = ("tp", "pp", "dp", "ep", "cp", "other")


def load_breakdown(path):
    """Rows of breakdown.csv as dicts of floats (rank as int)."""
    rows = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = ["rank", "compute_s", "bubble_s", "idle_s"] + [f"exposed_{k}_s" for k in KINDS]
        missing = [c for c in need if c not in (reader.fieldnames or [])]
        if missing:
            sys.exit(f"{path}: no column(s) {', '.join(missing)}: is it a breakdown.csv written by railyard run?")
        for row in reader:
            if None in row or None in row.values():
                sys.exit(f"{path}:{reader.line_num}: the row does not have one field per column")
            rows.append({k: (int(v) if k == "rank" else float(v)) for k, v in row.items()})
    if not rows:
        sys.exit(f"{path}: no ranks")
    return rows


def parts(row):
    """(name, seconds) of the stacked parts of one rank, in drawing order."""
    out = [("compute", row["compute_s"])]
    out += [(f"exposed {k.upper() if k != 'other' else 'other'}", row[f"exposed_{k}_s"]) for k in KINDS]
    out += [("bubble", row["bubble_s"]), ("idle", row["idle_s"])]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="output folder of `railyard run` with a workload: section")
    ap.add_argument("--png", help="output image (default: FOLDER-breakdown.png, beside the folder)")
    ap.add_argument("--text", action="store_true", help="print the numbers only, no plot")
    args = ap.parse_args()

    rows = load_breakdown(os.path.join(args.folder, "breakdown.csv"))
    with open(os.path.join(args.folder, "summary.json")) as f:
        summary = json.load(f)
    step = float(summary["step_time_s"])
    names = [name for name, _ in parts(rows[0])]
    used = [n for i, n in enumerate(names) if any(parts(r)[i][1] > 0 for r in rows)]

    print(f"{args.folder}: {summary.get('scenario')}, {len(rows)} ranks, step {step:.6f} s, "
          f"communication {summary.get('communication')}")
    for i, name in enumerate(names):
        if name not in used:
            continue
        values = [parts(r)[i][1] for r in rows]
        print(f"  {name:<12} mean {100 * sum(values) / len(values) / step:6.2f}%  "
              f"min {100 * min(values) / step:6.2f}%  max {100 * max(values) / step:6.2f}% of the step")
    worst = max(abs(sum(v for _, v in parts(r)) - step) for r in rows)
    if worst > 1e-9 * max(step, 1e-30) + 1e-12:
        print(f"  note: the parts of some rank differ from the step time by {worst:.3g} s")
    if args.text:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is missing (Debian: apt-get install python3-matplotlib): printed the numbers above "
                 "instead of plotting them")

    ranks = [r["rank"] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    bottom = [0.0] * len(rows)
    width = 1.0 if len(rows) > 64 else 0.8
    for i, name in enumerate(names):
        if name not in used:
            continue
        heights = [parts(r)[i][1] * 1e3 for r in rows]
        ax.bar(ranks, heights, width=width, bottom=bottom, label=name, linewidth=0)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.axhline(step * 1e3, color="black", linewidth=0.8, linestyle=":", label="step time")
    ax.set_xlabel("rank")
    ax.set_ylabel("time in the step (ms)")
    ax.set_title(f"{summary.get('scenario')}: where each rank's step time goes", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    png = args.png or os.path.normpath(args.folder) + "-breakdown.png"
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
