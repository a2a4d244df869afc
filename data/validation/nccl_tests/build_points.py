#!/usr/bin/env python3
"""Build points.csv from the verbatim source excerpts in raw/*.txt (python3 stdlib only).

Each raw file holds one or more blocks:

    @block
    key=value            (metadata shared by every row of the block)
    ...
    @rows
    <rows copied verbatim from the source>
    @end

Row formats (key `format`):
  nccl_root    nccl-tests row: size count type redop root time algbw busbw #wrong [in-place ...]
  nccl_noroot  older nccl-tests row without the root column: size count type redop time algbw busbw error ...
  nccl_bare    nccl-tests row with neither redop nor root (old all_gather/alltoall): size count type time algbw busbw ...
  size_time_algbw_busbw   author-trimmed rows (sizes may contain '_' digit separators)
  kv           'key=value | key=value ...' rows (used where the source printed only busbw)

The FIRST time/algbw/busbw triple (out-of-place) is the point; the in-place time, where the row prints one
(after the out-of-place #wrong), is kept as time_in_place_us: the same call timed a second time in the same run,
which bounds how closely any model can match the row.
A row may end with '  #flag=<reason>' to flag just that row.
"""
import csv
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = ["id", "system", "gpu", "nodes", "gpus_per_node", "ranks", "interconnect_intra",
          "interconnect_inter", "nics_per_node", "nccl_version", "collective", "forced_algo",
          "forced_proto", "other_env", "size_bytes", "dtype", "time_us", "algbw_GBps",
          "busbw_GBps", "nccl_tests_flags", "source_url", "source_locator", "flag", "time_in_place_us"]
COLL_ABBR = {"all_reduce": "ar", "all_gather": "ag", "reduce_scatter": "rs", "alltoall": "a2a",
             "broadcast": "bc", "reduce": "red", "sendrecv": "sr"}
SKIP = {"nccl_root": 2, "nccl_noroot": 1, "nccl_bare": 0}


def parse_blocks(path):
    blocks, cur, in_rows = [], None, False
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            s = line.strip()
            if s == "@block":
                cur, in_rows = {"meta": {}, "rows": [], "file": os.path.basename(path)}, False
            elif s == "@rows":
                in_rows = True
            elif s == "@end":
                blocks.append(cur)
                cur, in_rows = None, False
            elif cur is None:
                continue
            elif in_rows:
                if s:
                    cur["rows"].append(line)
            elif s and not s.startswith("#") and "=" in s:
                k, v = s.split("=", 1)
                cur["meta"][k.strip()] = v.strip()
    return blocks


def is_number(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def row_values(fmt, line):
    """Return dict of per-row fields parsed from one verbatim row."""
    rowflag = ""
    if "#flag=" in line:
        line, rowflag = line.split("#flag=", 1)
        rowflag = rowflag.strip()
    out = {"row_flag": rowflag}
    if fmt in SKIP:
        t = line.split()
        out["size_bytes"] = str(int(t[0]))
        out["dtype_row"] = t[2]
        i = 3 + SKIP[fmt]
        out["time_us"], out["algbw_GBps"], out["busbw_GBps"] = t[i], t[i + 1], t[i + 2]
        # The in-place group follows the out-of-place #wrong: time algbw busbw #wrong.
        if len(t) >= i + 7 and all(is_number(x) for x in t[i + 4:i + 7]):
            out["time_in_place_us"] = t[i + 4]
    elif fmt == "size_time_algbw_busbw":
        t = line.split()
        out["size_bytes"] = str(int(t[0].replace("_", "")))
        out["time_us"], out["algbw_GBps"], out["busbw_GBps"] = t[1], t[2], t[3]
    elif fmt == "kv":
        for part in line.split(" | "):
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
        out.setdefault("time_us", "")
        out.setdefault("algbw_GBps", "")
        out["busbw_GBps"] = out.pop("busbw")
        if "algbw" in out:
            out["algbw_GBps"] = out.pop("algbw")
    else:
        raise ValueError("unknown format " + fmt)
    return out


def main(here=HERE):
    """`here`: the corpus folder (points.csv, raw/); data/validation/rccl_tests runs this with its own."""
    rows, seen = [], set()
    for path in sorted(glob.glob(os.path.join(here, "raw", "*.txt"))):
        for b in parse_blocks(path):
            m = b["meta"]
            for line in b["rows"]:
                v = row_values(m["format"], line)
                r = {k: m.get(k, "") for k in HEADER}
                for k in ("collective", "ranks", "gpus_per_node", "nodes", "forced_algo",
                          "forced_proto", "nccl_tests_flags", "size_bytes", "time_us",
                          "algbw_GBps", "busbw_GBps", "dtype", "system", "time_in_place_us"):
                    if k in v:
                        r[k] = v[k]
                if "dtype_row" in v and not r["dtype"]:
                    r["dtype"] = v["dtype_row"]
                # other_env: block-level + row-level, ';'-joined
                envs = [e for e in (m.get("other_env", ""), v.get("other_env", "")) if e]
                r["other_env"] = ";".join(envs)
                if "ranks" in v and "gpus_per_node" not in v and m.get("nodes") == "1":
                    r["gpus_per_node"] = v["ranks"]
                loc = m.get("source_locator", "")
                if v.get("note"):
                    loc += "; row note: " + v["note"]
                r["source_locator"] = loc
                flags = [f for f in (m.get("flag", ""), v.get("row_flag", ""), v.get("flag", "")) if f]
                r["flag"] = ";".join(flags)
                # id
                parts = [m["id_prefix"], COLL_ABBR[r["collective"]]]
                if "ranks" in v:
                    parts.append("n" + v["ranks"])
                if r["forced_algo"]:
                    parts.append(r["forced_algo"].lower().replace("/", ""))
                if "id_extra" in v:
                    parts.append(v["id_extra"])
                elif m["format"] == "kv" and "NCCL_NVLS_ENABLE=0" in v.get("other_env", ""):
                    parts.append("nvlsoff")
                elif m["format"] == "kv" and "NCCL_NVLS_ENABLE=1" in v.get("other_env", ""):
                    parts.append("nvlson")
                parts.append(r["size_bytes"])
                rid = "_".join(parts)
                if rid in seen:
                    k = 2
                    while f"{rid}_r{k}" in seen:
                        k += 1
                    rid = f"{rid}_r{k}"
                seen.add(rid)
                r["id"] = rid
                rows.append(r)
    out = os.path.join(here, "points.csv")
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=HEADER, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    print(f"wrote {len(rows)} rows to {out}")


if __name__ == "__main__":
    sys.exit(main())
