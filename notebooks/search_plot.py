#!/usr/bin/env python3
"""The layouts of a search: step time against memory per GPU, the ranked ones as points (the top ones labelled with
their layout), the ones that do not fit at their memory on the right of the GPU's capacity line, from the folder
`railyard search` wrote (its search.csv, read with railyard_results.load_search).

  python3 notebooks/search_plot.py out/llama3_70b_512 --top 5
  python3 notebooks/search_plot.py out/llama3_70b_512 --text

The image goes beside the folder (<folder>-search.png).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import railyard_results as rr  # noqa: E402

GIB = 1024.0 ** 3
LAYOUT = ["tp", "pp", "virtual_stages", "cp", "ep", "zero", "sequence_parallel", "micro_batch", "recompute", "dp"]


def describe(row):
    return " ".join(f"{k}={row[k]}" for k in LAYOUT if k in row.index)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="a railyard search output folder")
    ap.add_argument("--top", type=int, default=5, help="layouts labelled (default 5)")
    ap.add_argument("--png", help="output image (default: <folder>-search.png)")
    ap.add_argument("--text", action="store_true", help="print the numbers, draw nothing")
    args = ap.parse_args()
    t = rr.load_search(args.folder)
    ranked = t[t["status"] == "ok"].sort_values("rank")
    refused = t[t["status"] == "does_not_fit"]
    if ranked.empty:
        sys.exit(f"{args.folder}: no layout was ranked ({len(refused)} do not fit)")
    print(f"{args.folder}: {len(ranked)} ranked, {len(refused)} do not fit, "
          f"{int((t['status'] == 'not_a_layout').sum())} not layouts")
    for _, r in ranked.head(args.top).iterrows():
        print(f"  #{int(r['rank'])}: {r['step_time_s']:.6f} s, {r['peak_gpu_memory_bytes'] / GIB:.1f} GiB  "
              f"{describe(r)}")
    if args.text:
        return
    plt = rr.pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.scatter(ranked["peak_gpu_memory_bytes"] / GIB, ranked["step_time_s"], s=18, label="simulated")
    top = []
    for i, (_, r) in enumerate(ranked.head(args.top).iterrows()):
        ax.annotate(f"#{int(r['rank'])}", (r["peak_gpu_memory_bytes"] / GIB, r["step_time_s"]), fontsize=7,
                    xytext=(-14, 4 + 7 * i), textcoords="offset points", arrowprops={"arrowstyle": "-", "lw": 0.5})
        top.append(f"#{int(r['rank'])} {r['step_time_s']:.3f} s  {describe(r)}")
    ax.text(0.99, 0.99, "\n".join(top), transform=ax.transAxes, fontsize=6, va="top", ha="right", family="monospace",
            bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "gray"})
    capacity = t["gpu_memory_capacity_bytes"].dropna()
    if not capacity.empty:
        ax.axvline(capacity.max() / GIB, color="red", linestyle="--", linewidth=1, label="GPU memory")
    if not refused.empty:
        ymin, ymax = ax.get_ylim()
        ax.scatter(refused["peak_gpu_memory_bytes"] / GIB, [ymax] * len(refused), marker="x", color="gray",
                   s=14, label=f"do not fit ({len(refused)}, not simulated)")
    ax.set_xlabel("peak memory per GPU (GiB)")
    ax.set_ylabel("step time (s)")
    ax.set_title(os.path.basename(os.path.normpath(args.folder)))
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    png = args.png or os.path.normpath(args.folder) + "-search.png"
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
