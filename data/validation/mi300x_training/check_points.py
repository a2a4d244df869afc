#!/usr/bin/env python3
"""Check mi300x_training/points.csv against the verbatim log lines in raw/ (python3 stdlib only). Exit 1 on a mismatch.

For every row: gpus == nodes*gpus_per_node == tp*pp*cp*dp (dp counts data-parallel replicas; EP shares the DP ranks),
global_batch is a multiple of micro_batch*dp, and step_time_ms / tflops_per_gpu / tokens_per_s_per_gpu occur in the
iteration lines kept verbatim in raw/*.txt. MLPerf logs print no step time, only samples per second
('"throughput": X' of tracked_stats): a row whose metric_note names 'tracked_stats throughput X' must find X verbatim in
raw/ and have step_time_ms = global_batch / X * 1000 to the 0.1 ms printed."""
import csv, glob, os, re, sys
HERE = os.path.dirname(os.path.abspath(__file__))
raw = "".join(open(p, encoding="utf-8").read() for p in glob.glob(os.path.join(HERE, "raw", "*.txt")))
errs = []
rows = list(csv.DictReader(open(os.path.join(HERE, "points.csv"), encoding="utf-8")))
for r in rows:
    n, g = int(r["nodes"]) * int(r["gpus_per_node"]), int(r["gpus"])
    if n != g or int(r["tp"]) * int(r["pp"]) * int(r["dp"]) * int(r["cp"] or 1) != g:
        errs.append(f"{r['id']}: gpu count does not match nodes/gpus_per_node or tp*pp*cp*dp")
    if int(r["global_batch"]) % (int(r["micro_batch"]) * int(r["dp"])):
        errs.append(f"{r['id']}: global_batch not a multiple of micro_batch*dp")
    mlperf = re.search(r"tracked_stats throughput ([0-9.]+)", r["metric_note"])
    if mlperf:
        x = mlperf.group(1)
        if f'"throughput": {x}' not in raw:
            errs.append(f"{r['id']}: tracked_stats throughput {x} not found verbatim in raw/")
        elif abs(float(r["step_time_ms"]) - int(r["global_batch"]) / float(x) * 1000) > 0.05 + 1e-9:
            errs.append(f"{r['id']}: step_time_ms {r['step_time_ms']} != global_batch / throughput * 1000")
    for k, pat in (("step_time_ms", "elapsed time per iteration (ms): {}"), ("tflops_per_gpu", "(TFLOP/s/GPU): {}"),
                   ("tokens_per_s_per_gpu", "(tokens/s/GPU): {}")):
        if r[k] and not (mlperf and k == "step_time_ms") and pat.format(r[k]) not in raw:
            errs.append(f"{r['id']}: {k}={r[k]} not found verbatim in raw/")
print(f"rows: {len(rows)}")
for e in errs:
    print("VIOLATION", e)
print("OK: no violations" if not errs else f"{len(errs)} violation(s)")
sys.exit(1 if errs else 0)
