"""Railyard's outputs as pandas objects, for notebooks: one loader per output, so no notebook carries its own.

    import railyard_results as rr
    table = rr.load_sweep("out/fabric_cc_1024")        # results.csv: one row per point, axes and metrics typed
    ranked = rr.load_search("out/llama3_70b_512")      # search.csv: ranked layouts, then the others
    plan, bom = rr.load_plan("out/plan_h100_vs_h200")  # plan.csv (one row per cluster) and bom.csv
    summary = rr.load_summary("out/llama3_70b_1024")   # summary.json as a dict
    runs = rr.summaries(["out/a", "out/b"])            # one row per run, summary.json's scalars flattened

Numbers are read as numbers (pandas' CSV reader; RFC 4180 quoting, so an error message holding commas stays one
field); an empty cell (a metric a point did not report, a failed point's step time) is NaN. Needs python3-pandas.
"""
import json
import os

import pandas as pd


def _table(path, what):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no {what} here (is this the folder `railyard {what.split()[0]}` wrote?)")
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def load_sweep(folder):
    """A sweep's results.csv (railyard sweep --out FOLDER): point, status, the axes, the metrics, error, folder."""
    return _table(os.path.join(folder, "results.csv"), "sweep results.csv")


def load_search(folder):
    """A search's search.csv (railyard search --out FOLDER): rank (NaN for layouts not ranked), status, the layout
    keys, dp, step time, MFU, memory per GPU, pareto, reason."""
    return _table(os.path.join(folder, "search.csv"), "search search.csv")


def load_plan(folder):
    """A plan's tables (railyard plan --out FOLDER): plan.csv, one row per cluster (GPUs, switches, transceivers,
    capex, power, step time, days, energy and cost to train), and bom.csv, every line of every cluster's bill of
    materials (an unpriced part has NaN price)."""
    return (_table(os.path.join(folder, "plan.csv"), "plan plan.csv"),
            _table(os.path.join(folder, "bom.csv"), "plan bom.csv"))


def load_summary(folder_or_file):
    """A run's summary.json (a `railyard run` output folder, or the file itself) as a dict."""
    path = folder_or_file
    if os.path.isdir(path):
        path = os.path.join(path, "summary.json")
    with open(path) as f:
        return json.load(f)


def summaries(folders):
    """One row per run folder: summary.json's scalars, nested keys joined with '.' (lists left out)."""
    rows = []
    for folder in folders:
        s = load_summary(folder)
        flat = pd.json_normalize({k: v for k, v in s.items() if not isinstance(v, list)}, sep=".")
        flat.insert(0, "folder", folder)
        rows.append(flat)
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def pyplot():
    """matplotlib.pyplot drawing to files (Agg), or exit with what to install; for the study notebooks' plots."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("matplotlib is missing (Debian: python3-matplotlib); --text prints the numbers")
    return plt


def swept_columns(table):
    """The axis and derived columns of a sweep table: those between `status` and the first metric, i.e. the columns
    whose name holds a dot (scenario keys are dotted paths; metric names never are)."""
    return [c for c in table.columns if "." in c]
