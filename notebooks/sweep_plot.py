#!/usr/bin/env python3
"""A metric of a sweep against one of its axes, one line per combination of the other axes, from the folder
`railyard sweep` wrote (its results.csv, read with railyard_results.load_sweep).

  python3 notebooks/sweep_plot.py out/fabric_cc_1024 --x network.qps_per_connection --y step_time_s
  python3 notebooks/sweep_plot.py out/sweep_layouts --text      # the numbers, no plot

Defaults: --x the last axis that takes more than one value, --y step_time_s (a collectives sweep: c0_busbw_GBps).
Points that did not finish are left out and counted. The image goes beside the folder (<folder>-sweep.png).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import railyard_results as rr  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="a railyard sweep output folder")
    ap.add_argument("--x", help="the axis on the x axis (a swept key)")
    ap.add_argument("--y", help="the metric (a results.csv column)")
    ap.add_argument("--png", help="output image (default: <folder>-sweep.png)")
    ap.add_argument("--text", action="store_true", help="print the numbers, draw nothing")
    args = ap.parse_args()
    table = rr.load_sweep(args.folder)
    swept = [c for c in rr.swept_columns(table) if table[c].nunique() > 1]
    if not swept:
        sys.exit(f"{args.folder}: no axis takes more than one value")
    x = args.x or swept[-1]
    y = args.y or ("step_time_s" if "step_time_s" in table else "c0_busbw_GBps")
    for col in (x, y):
        if col not in table:
            sys.exit(f"{args.folder}/results.csv has no column '{col}'; its columns: {', '.join(table.columns)}")
    ok = table[table["status"] == "ok"]
    left_out = len(table) - len(ok)
    others = [c for c in swept if c != x]
    groups = list(ok.groupby(others, sort=False)) if others else [((), ok)]
    print(f"{args.folder}: {len(ok)} points ({left_out} did not finish), {y} against {x}, "
          f"{len(groups)} line(s) over {', '.join(others) or 'nothing else'}")
    lines = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in zip(others, key)) or y
        g = g.sort_values(x, key=lambda s: s.astype(str) if s.dtype == object else s)
        lines.append((label, list(g[x]), list(g[y])))
        print(f"  {label}: " + "  ".join(f"{a}: {b:.6g}" for a, b in zip(g[x], g[y])))
    if args.text:
        return
    plt = rr.pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, xs, ys in lines:
        ax.plot([str(v) for v in xs], ys, marker="o", label=label)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{os.path.basename(os.path.normpath(args.folder))}: {y}")
    if len(lines) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    png = args.png or os.path.normpath(args.folder) + "-sweep.png"
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
