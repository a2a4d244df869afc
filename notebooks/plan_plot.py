#!/usr/bin/env python3
"""A capacity plan side by side: per cluster, what it costs to buy (capex by category of the bill of materials), its
facility power, and, where the plan has a training budget, the days, energy and cost to train it, from the folder
`railyard plan` wrote (plan.csv and bom.csv, read with railyard_results.load_plan).

  python3 notebooks/plan_plot.py out/plan_h100_vs_h200
  python3 notebooks/plan_plot.py out/plan_h100_vs_h200 --text

The image goes beside the folder (<folder>-plan.png).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import railyard_results as rr  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="a railyard plan output folder")
    ap.add_argument("--png", help="output image (default: <folder>-plan.png)")
    ap.add_argument("--text", action="store_true", help="print the numbers, draw nothing")
    args = ap.parse_args()
    plan, bom = rr.load_plan(args.folder)
    if plan.empty:
        sys.exit(f"{args.folder}: the plan has no cluster")
    # capex by category, from the bill of materials; it must add up to plan.csv's capex.
    bom["kind"] = bom["category"].str.replace(r" \(.*\)", "", regex=True)
    by_kind = bom.pivot_table(index="cluster", columns="kind", values="price_usd", aggfunc="sum").reindex(
        plan["cluster"]).fillna(0)
    for _, r in plan.iterrows():
        total = by_kind.loc[r["cluster"]].sum()
        if abs(total - r["capex_usd"]) > 1e-6 * max(1.0, r["capex_usd"]):
            sys.exit(f"{args.folder}: {r['cluster']}: bom.csv adds up to {total}, plan.csv says {r['capex_usd']}")
    trained = "train_days" in plan and plan["train_days"].notna().any()
    for _, r in plan.iterrows():
        line = (f"  {r['cluster']}: {int(r['gpus'])} GPUs, capex ${r['capex_usd'] / 1e6:.2f}M, "
                f"{r['facility_power_kw']:.0f} kW facility")
        if trained and r["train_days"] == r["train_days"]:
            line += (f", {r['train_days']:.1f} days, {r['energy_mwh']:.0f} MWh, "
                     f"${r['cost_usd'] / 1e6:.2f}M to train")
        print(line)
    if args.text:
        return
    plt = rr.pyplot()
    panels = 3 if trained else 2
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 4.2))
    bottom = [0.0] * len(plan)
    for kind in by_kind.columns:
        vals = list(by_kind[kind] / 1e6)
        axes[0].bar(plan["cluster"], vals, bottom=bottom, label=kind)
        bottom = [b + v for b, v in zip(bottom, vals)]
    axes[0].set_ylabel("capex (million USD)")
    axes[0].legend(fontsize=7)
    axes[1].bar(plan["cluster"], plan["facility_power_kw"] / 1000)
    axes[1].set_ylabel("facility power (MW)")
    if trained:
        axes[2].bar(plan["cluster"], plan["cost_usd"] / 1e6)
        axes[2].set_ylabel("cost to train (million USD)")
        for i, (_, r) in enumerate(plan.iterrows()):
            if r["train_days"] == r["train_days"]:
                axes[2].annotate(f"{r['train_days']:.0f} d", (i, r["cost_usd"] / 1e6), ha="center", fontsize=7,
                                 xytext=(0, 2), textcoords="offset points")
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=20, labelsize=7)
    fig.suptitle(os.path.basename(os.path.normpath(args.folder)))
    fig.tight_layout()
    png = args.png or os.path.normpath(args.folder) + "-plan.png"
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
