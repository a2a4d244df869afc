#!/usr/bin/env python3
"""Seeds for the fuzz targets that need more than a folder of files: built from the real traces in tests/data/traces.

    python3 tests/fuzz/make_seeds.py OUT

writes OUT/chakra/ (several ranks' .et files and comm_group.json joined into one input, as fuzz_chakra.cpp splits
them), OUT/kineto/ (small excerpts of the real Kineto traces, single and several ranks, plain, gzip and tar.gz) and
OUT/simai/ (SimAI's examples, the large one cut down).
The output depends only on the input files: same bytes every run (gzip and tar headers carry no time or owner).
"""
import gzip
import io
import json
import pathlib
import sys
import tarfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "data" / "traces"
SEPARATOR = b"\n#railyard-fuzz-next-file\n"  # kFileSeparator in fuzz_support.hpp
EXCERPT_EVENTS = 60  # events kept per Kineto trace: small enough for fast runs, enough to hold collectives
SIMAI_LAYERS = 200


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def chakra_seeds(out):
    sets = {
        "t3d_comm_groups": ("chakra_et/astrasim_artifacts_T3D", "trace", True),
        "microbench_all_reduce": ("chakra_et/astrasim_microbench_all_reduce_8npus_1MB", "all_reduce", False),
        "custom_ring_send_recv": ("chakra_et/astrasim_custom_ring_allreduce_8npus_1MB", "custom_allreduce", False),
    }
    for name, (folder, prefix, groups) in sets.items():
        d = TRACES / folder
        parts = [(d / "comm_group.json").read_bytes() if groups else b""]
        parts += [(d / f"{prefix}.{r}.et").read_bytes() for r in range(8)]
        write(out / "chakra" / f"{name}.pack", SEPARATOR.join(parts))


def load_kineto(path):
    """JSON documents of a .json.gz file or of every .json member of a .tar.gz, in member-name order."""
    if path.name.endswith(".tar.gz"):
        with tarfile.open(path) as tar:
            members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".json")
                              and not pathlib.PurePath(m.name).name.startswith("._")), key=lambda m: m.name)
            return [json.load(tar.extractfile(m)) for m in members]
    with gzip.open(path) as f:
        return [json.load(f)]


def excerpt(doc):
    """The trace's metadata and EXCERPT_EVENTS events in time order from just before its first NCCL kernel, so the
    excerpt holds GPU kernels, their launches and at least one collective."""
    events = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    meta = [e for e in events if e.get("ph") == "M"]
    timed = sorted((e for e in events if e.get("ph") == "X" and "ts" in e), key=lambda e: float(e["ts"]))
    first_nccl = next((i for i, e in enumerate(timed)
                       if e.get("cat") == "kernel" and str(e.get("name", "")).startswith("nccl")), 0)
    start = max(0, first_nccl - EXCERPT_EVENTS // 2)
    out = {k: v for k, v in doc.items() if k != "traceEvents"}
    out["traceEvents"] = meta + timed[start:start + EXCERPT_EVENTS]
    return json.dumps(out, separators=(",", ":"), sort_keys=True).encode()


def gzip_bytes(data):
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:
        f.write(data)
    return buf.getvalue()


def tar_gz_bytes(files):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return gzip_bytes(raw.getvalue())


def kineto_seeds(out):
    k = TRACES / "kineto"
    singles = {
        "hta_nccl_data": k / "hta/nccl_parser_config/nccl_data.json.gz",
        "hta_control": k / "hta/trace_diff_control/control.json.gz",
    }
    for name, path in singles.items():
        write(out / "kineto" / f"{name}.json", excerpt(load_kineto(path)[0]))
    sampled = [excerpt(load_kineto(k / f"hta/trace_filter/sampled_rank-{r}.json.gz")[0]) for r in (0, 1)]
    write(out / "kineto" / "hta_sampled_2_ranks.pack", SEPARATOR.join(sampled))
    dlrm = [excerpt(d) for d in load_kineto(k / "param_dlrm_8rank_v100/dlrm_kineto.tar.gz")]
    write(out / "kineto" / "dlrm_8_ranks.pack", SEPARATOR.join(dlrm))
    write(out / "kineto" / "dlrm_rank0.json.gz", gzip_bytes(dlrm[0]))
    write(out / "kineto" / "dlrm_2_ranks.tar.gz",
          tar_gz_bytes([(f"dlrm/worker{r}.pt.trace.json", dlrm[r]) for r in (0, 1)]))


def simai_seeds(out):
    """SimAI's own examples. Its 9,216-GPU MoE workload takes over 10 s per read under the sanitizers (2 s without),
    which libFuzzer would report as a hang, so the seed keeps its header and first SIMAI_LAYERS layers on 384 GPUs
    (TP 2 x PP 12 x EP 16, the smallest count its parallelism divides)."""
    d = TRACES / "simai" / "SimAI_example"
    write(out / "simai" / "microAllReduce.txt", (d / "microAllReduce.txt").read_bytes())
    for f in sorted((TRACES / "simai" / "aicb_simAI_micro_test").iterdir()):
        write(out / "simai" / ("aicb_micro_" + f.name), f.read_bytes())
    lines = (d / "workload_analytical.txt").read_text().splitlines(keepends=True)
    header = lines[0].replace("all_gpus: 9216", "all_gpus: 384")
    assert header != lines[0], "the header of workload_analytical.txt changed"
    layers = lines[2:2 + SIMAI_LAYERS]
    write(out / "simai" / "workload_analytical_384_gpus.txt", (header + f"{len(layers)}\n" + "".join(layers)).encode())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    chakra_seeds(out)
    kineto_seeds(out)
    simai_seeds(out)


if __name__ == "__main__":
    main()
