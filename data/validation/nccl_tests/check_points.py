#!/usr/bin/env python3
"""Validate points.csv (python3 stdlib only). Exit 1 on any violation.

Checks
  * header is exactly the agreed column list
  * ids unique and non-empty
  * integer fields (nodes, gpus_per_node, ranks, size_bytes) parse; ranks == nodes*gpus_per_node
    whenever both nodes and gpus_per_node are integers
  * time_us / algbw_GBps / busbw_GBps parse as floats; busbw is mandatory. time/algbw may be empty
    only for rows whose source did not print them (source_locator says "busbw only" or "not printed")
  * busbw vs algbw by the nccl-tests factor (all_reduce 2(n-1)/n; all_gather, reduce_scatter,
    alltoall (n-1)/n; broadcast, reduce, sendrecv 1): within 2 % or within the rounding of the
    printed digits (half a unit in the last printed place of each value, propagated)
  * algbw vs size/time (size in bytes / time in us / 1e3 = GB/s): within the rounding of the
    printed digits of time and algbw
  * collective in the allowed set
  * time_in_place_us, where present (the row's in-place time), parses as a float above zero
Rows whose flag contains "approx" are parsed but excluded from the two consistency checks.
Prints summary counts per system, ranks, collective, size decade, forced algo.
"""
import csv
import math
import os
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = ["id", "system", "gpu", "nodes", "gpus_per_node", "ranks", "interconnect_intra",
          "interconnect_inter", "nics_per_node", "nccl_version", "collective", "forced_algo",
          "forced_proto", "other_env", "size_bytes", "dtype", "time_us", "algbw_GBps",
          "busbw_GBps", "nccl_tests_flags", "source_url", "source_locator", "flag", "time_in_place_us"]
COLLS = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce",
         "sendrecv"}


def factor(coll, n):
    if coll == "all_reduce":
        return 2.0 * (n - 1) / n
    if coll in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def half_ulp(s):
    """Half a unit in the last printed decimal place of the string s."""
    s = s.strip()
    if "e" in s.lower():
        mant = s.lower().split("e")[0]
        exp = int(s.lower().split("e")[1])
        d = len(mant.split(".")[1]) if "." in mant else 0
        return 0.5 * 10 ** (exp - d)
    d = len(s.split(".")[1]) if "." in s else 0
    return 0.5 * 10 ** (-d)


def main(here=HERE):
    """`here`: the corpus folder (points.csv, raw/); data/validation/rccl_tests runs this with its own."""
    path = os.path.join(here, "points.csv")
    errors = []
    with open(path, newline="", encoding="utf-8") as f:
        rd = csv.reader(f)
        header = next(rd)
        if header != HEADER:
            errors.append(f"header mismatch: {header}")
        rows = [dict(zip(header, r)) for r in rd]
    ids = Counter(r["id"] for r in rows)
    for k, c in ids.items():
        if not k:
            errors.append("empty id")
        elif c > 1:
            errors.append(f"duplicate id {k} x{c}")
    for r in rows:
        rid = r["id"]
        try:
            size = int(r["size_bytes"])
            ranks = int(r["ranks"])
        except ValueError:
            errors.append(f"{rid}: size_bytes/ranks not integer")
            continue
        if ranks < 1 or size < 0:
            errors.append(f"{rid}: bad ranks/size")
        try:
            nodes, gpn = int(r["nodes"]), int(r["gpus_per_node"])
            if nodes * gpn != ranks:
                errors.append(f"{rid}: ranks {ranks} != nodes {nodes} * gpus_per_node {gpn}")
        except ValueError:
            errors.append(f"{rid}: nodes/gpus_per_node not integer")
        if r["collective"] not in COLLS:
            errors.append(f"{rid}: bad collective {r['collective']}")
        ip = r["time_in_place_us"].strip()
        if ip:
            try:
                if not float(ip) > 0:
                    errors.append(f"{rid}: time_in_place_us {ip} not above zero")
            except ValueError:
                errors.append(f"{rid}: time_in_place_us {ip} not numeric")
        try:
            bus = float(r["busbw_GBps"])
        except ValueError:
            errors.append(f"{rid}: busbw not numeric")
            continue
        t_s, a_s = r["time_us"].strip(), r["algbw_GBps"].strip()
        if not t_s or not a_s:
            loc = r["source_locator"]
            if "busbw only" not in loc and "not printed" not in loc:
                errors.append(f"{rid}: time/algbw empty but source_locator does not say 'busbw only'/'not printed'")
            if not a_s:
                continue
        try:
            alg = float(a_s)
            tim = float(t_s) if t_s else None
        except ValueError:
            errors.append(f"{rid}: time/algbw not numeric")
            continue
        if "approx" in r["flag"]:
            continue
        # busbw vs algbw
        fac = factor(r["collective"], ranks)
        exp_bus = alg * fac
        tol = max(0.02 * exp_bus, half_ulp(a_s) * fac + half_ulp(r["busbw_GBps"]) + 1e-9)
        if abs(bus - exp_bus) > tol:
            errors.append(f"{rid}: busbw {bus} vs algbw*factor {exp_bus:.4f} (factor {fac:.4f}, tol {tol:.4f})")
        # algbw vs size/time
        if tim is not None and tim > 0:
            exp_alg = size / tim / 1e3
            ht = half_ulp(t_s)
            lo, hi = size / (tim + ht) / 1e3, size / max(tim - ht, 1e-12) / 1e3
            slack = half_ulp(a_s) + 1e-9
            if not (lo - slack <= alg <= hi + slack):
                rel = abs(alg - exp_alg) / exp_alg if exp_alg else math.inf
                errors.append(f"{rid}: algbw {alg} vs size/time {exp_alg:.4f} (rel {rel:.3%})")
    # summary
    def dec(s):
        s = int(s)
        if s < 1024:
            return "a) <1KiB"
        if s < 1 << 20:
            return "b) 1KiB-<1MiB"
        if s < 1 << 30:
            return "c) 1MiB-<1GiB"
        return "d) >=1GiB"

    def dec10(s):
        s = int(s)
        return "1e%d" % int(math.floor(math.log10(s))) if s > 0 else "0"

    print(f"points: {len(rows)}")
    for title, key in (("system", lambda r: r["system"]), ("gpu", lambda r: r["gpu"]),
                       ("ranks", lambda r: int(r["ranks"])),
                       ("nodes", lambda r: r["nodes"]),
                       ("collective", lambda r: r["collective"]),
                       ("forced_algo", lambda r: r["forced_algo"] or "(NCCL default)"),
                       ("size decade (bytes, 10^k)", lambda r: dec10(r["size_bytes"])),
                       ("size band", lambda r: dec(r["size_bytes"])),
                       ("flagged", lambda r: "flagged" if r["flag"] else "unflagged")):
        c = Counter(key(r) for r in rows)
        print(f"\nper {title}:")
        for k in sorted(c, key=lambda x: (str(type(x)), x)):
            print(f"  {k}: {c[k]}")
    print(f"\nsystems: {len(set(r['system'] for r in rows))}")
    if errors:
        print(f"\n{len(errors)} VIOLATION(S):")
        for e in errors:
            print("  " + e)
        return 1
    print("\nOK: no violations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
