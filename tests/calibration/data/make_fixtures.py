#!/usr/bin/env python3
"""Writes the nccl-tests log fixtures of tests/calibration/data.

Every file is made by us: the layout follows NVIDIA/nccl-tests' printing code of each version (src/common.cu with
the per-test print_header of the 2.x releases before the #wrong column; src/util.cu writeDeviceReport,
writeResultHeader, writeBenchmarkLine*, writeResultFooter of current releases), and the numbers come from the
alpha-beta models below with seeded noise. They are not measurements. Run: python3 make_fixtures.py (writes next
to this script).
"""
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def float_str(value, width):
    """nccl-tests' getFloatStr (src/util.cu): precision shrinks as the number grows, exponent form past the width."""
    power = 0
    val = 1
    while value >= val:
        power += 1
        val *= 10
    if power < width - 2:
        return "%*.2f" % (width, value)
    if power < width - 1:
        return "%*.1f" % (width, value)
    if power < width + 1:
        return "%*.0f" % (width, value)
    return "%*.1e" % (width, value)


def sizes(lo, hi):
    s = lo
    while s <= hi:
        yield s
        s *= 2


def model_time_us(size, factor, rng, pieces, noise):
    """pieces: [(from_bytes, latency_us, busbw_GBps)]; the last piece whose from_bytes <= size applies."""
    lat, bw = None, None
    for start, l, b in pieces:
        if size >= start:
            lat, bw = l, b
    t = lat + size * factor / (bw * 1e3)  # bytes / (GB/s) = ns -> us: /1e3
    return t * (1.0 + rng.uniform(-noise, noise))


def bw_pair(size, t_us, factor):
    algbw = size / (t_us * 1e3) if t_us > 0 else 0.0  # GB/s
    return algbw, algbw * factor


def write(name, lines):
    with open(os.path.join(HERE, name), "w") as f:
        f.write("\n".join(lines) + "\n")


def old_format_allreduce():
    """nccl-tests 2.0-2.10 era: no Group/root/#wrong; 'error' holds the largest deviation; Rank lines with [0xNN]."""
    rng = random.Random(11)
    n = 8
    factor = 2 * (n - 1) / n
    pieces = [(0, 28.0, 2.0), (1 << 16, 45.0, 60.0), (1 << 22, 120.0, 228.0)]
    out = ["# made by us from the format in NVIDIA/nccl-tests src/common.cu (2.x releases before the #wrong column); "
           "numbers from a model, not measured",
           "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1",
           "#",
           "# Using devices"]
    for r in range(n):
        out.append("#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s" % (r, 40211, "dgx-a100-1", r,
                                                                          [7, 15, 71, 78, 135, 143, 183, 190][r],
                                                                          "A100-SXM4-40GB"))
    out.append("dgx-a100-1:40211:40211 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>")
    out.append("dgx-a100-1:40211:40211 [0] NCCL INFO NCCL version 2.7.8+cuda11.0")
    out.append("#")
    out.append("# %10s  %12s  %6s  %6s        out-of-place                       in-place          " % ("", "", "", ""))
    out.append("# %10s  %12s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % (
        "size", "count", "type", "redop", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"))
    out.append("# %10s  %12s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % (
        "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    total_bus = 0.0
    rows = 0
    for s in sizes(8, 134217728):
        line = "%12i  %12i  %6s  %6s" % (s, s // 4, "float", "sum")
        for _ in range(2):
            t = model_time_us(s, factor, rng, pieces, 0.02)
            alg, bus = bw_pair(s, t, factor)
            err = rng.choice([0.0, 1e-7, 2e-7, 4e-7])
            line += "  %7.2f  %6.2f  %6.2f  %5.0e" % (t, alg, bus, err)
            total_bus += bus
        out.append(line)
        rows += 1
    out.append("# Out of bounds values : 0 OK")
    out.append("# Avg bus bandwidth    : %g " % (total_bus / (2 * rows)))
    out.append("#")
    write("nccl_tests_2.8_all_reduce_a100.log", out)


def old_format_allgather():
    """Same era, all_gather_perf: its print_header had no redop column."""
    rng = random.Random(12)
    n = 8
    factor = (n - 1) / n
    pieces = [(0, 18.0, 1.5), (1 << 17, 30.0, 210.0)]
    out = ["# made by us from the format in NVIDIA/nccl-tests src/all_gather.cu and src/common.cu (2.x releases "
           "before the #wrong column); numbers from a model, not measured",
           "# nThread 1 nGpus 8 minBytes 64 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: 20 validation: 1",
           "#",
           "# Using devices"]
    for r in range(n):
        out.append("#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s" % (r, 5120, "a100-node7", r, 16 * r + 7,
                                                                          "A100-SXM4-80GB"))
    out.append("#")
    out.append("# %10s  %12s  %6s        out-of-place                       in-place          " % ("", "", ""))
    out.append("# %10s  %12s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % (
        "size", "count", "type", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"))
    out.append("# %10s  %12s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % (
        "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    total_bus, rows = 0.0, 0
    for s in sizes(64, 268435456):
        line = "%12i  %12i  %6s" % (s, s // 4 // n, "float")
        for _ in range(2):
            t = model_time_us(s, factor, rng, pieces, 0.02)
            alg, bus = bw_pair(s, t, factor)
            line += "  %7.2f  %6.2f  %6.2f  %5.0e" % (t, alg, bus, 0.0)
            total_bus += bus
        out.append(line)
        rows += 1
    out.append("# Out of bounds values : 0 OK")
    out.append("# Avg bus bandwidth    : %g " % (total_bus / (2 * rows)))
    out.append("#")
    write("nccl_tests_2.8_all_gather_a100.log", out)


def modern_rows(out, lo, hi, count_div, type_name, redop, root, factor, pieces, rng, per_iter=False, wrong_at=None,
                na=False):
    total_bus, rows = 0.0, 0
    for s in sizes(lo, hi):
        line = "%12li  %12li  %8s  %6s  %6s" % (s, s // count_div, type_name, redop, "%6i" % root)
        for half in range(2):
            t = model_time_us(s, factor, rng, pieces, 0.015)
            alg, bus = bw_pair(s, t, factor)
            wrong = 0
            if wrong_at is not None and s == wrong_at and half == 1:
                wrong = 12
            if na:
                line += "  %7s  %6s  %6s    N/A" % (float_str(t, 7), float_str(alg, 6), float_str(bus, 6))
            else:
                line += "  %7s  %6s  %6s  %6g" % (float_str(t, 7), float_str(alg, 6), float_str(bus, 6), wrong)
            if per_iter:
                lo_t, hi_t = t * 0.97, t * 1.06
                line += "  %7s  %7s  %7s  %7s" % (float_str(lo_t, 7), float_str(hi_t, 7), float_str(t * 1.05, 7),
                                                  float_str(2.5, 7))
            total_bus += bus
        out.append(line)
        rows += 1
    return total_bus / (2 * rows)


def column_header(out, per_iter=False, timestamp=False):
    if per_iter:
        out.append("# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                                "
                   "in-place (+ per-iteration)" % ("", "", "", "", ""))
        out.append(("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  "
                    "%7s  %7s") % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                                   "i_min", "i_max", "i_p99", "i_cv%", "time", "algbw", "busbw", "#wrong", "i_min",
                                   "i_max", "i_p99", "i_cv%"))
        out.append(("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  "
                    "%7s  %7s") % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)",
                                   "(us)", "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)"))
        return
    out.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % (
        "", "", "", "", ""))
    out.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s" % (
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
        "#wrong"))
    out.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s" % (
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))


def mid_format_allreduce_ring():
    """nccl-tests 2.13 era: Group in Rank lines, PCI id [0x..], redop/root/#wrong columns; run with NCCL_DEBUG=INFO
    and NCCL_ALGO=Ring, so NCCL's INFO lines are interleaved with nccl-tests' output."""
    rng = random.Random(13)
    n = 8
    factor = 2 * (n - 1) / n
    pieces = [(0, 24.0, 4.0), (1 << 18, 60.0, 355.0)]
    out = ["# made by us from the format in NVIDIA/nccl-tests src/common.cu (2.13); numbers from a model, not measured",
           "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
           "validation: 1 graph: 0",
           "#",
           "# Using devices"]
    for r in range(n):
        out.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s" % (r, 0, 3301, "h100-a", r,
                                                                                    [0x18, 0x2a, 0x3a, 0x5d, 0x9a,
                                                                                     0xab, 0xba, 0xdb][r],
                                                                                    "NVIDIA H100 80GB HBM3"))
    out.append("h100-a:3301:3301 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.5<0>")
    out.append("h100-a:3301:3301 [0] NCCL INFO NCCL version 2.18.3+cuda12.2")
    out.append("h100-a:3301:3318 [0] NCCL INFO NCCL_ALGO set by environment to Ring")
    out.append("#")
    column_header(out)
    avg = modern_rows(out, 8, 8589934592, 4, "float", "sum", -1, factor, pieces, rng)
    out.append("h100-a:3301:3301 [0] NCCL INFO comm 0x55d0c8 rank 0 nranks 8 cudaDev 0 busId 18000 - Destroy COMPLETE")
    out.append("# Out of bounds values : 0 OK")
    out.append("# Avg bus bandwidth    : %g " % avg)
    out.append("#")
    write("nccl_tests_2.13_all_reduce_h100_ring.log", out)


def new_header(out, program, nthreads, ngpus, lo, hi, devices, extra=""):
    out.append("# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22707")
    out.append("# Collective test starting: %s" % program)
    out.append("# nThread %d nGpus %d minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
               "validation: 1 graph: 0 unalign: 0" % (nthreads, ngpus, lo, hi))
    if extra:
        out.append(extra)
    out.append("#")
    out.append("# Using devices")
    for rank, (host, dev, bus, name) in enumerate(devices):
        out.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s" % (
            rank, 0, 91000 + rank, host, dev, 0, bus, 0, name))


def new_footer(out, avg, program):
    out.append("# Out of bounds values : 0 OK")
    out.append("# %-20s : %g %s" % ("Avg bus bandwidth", avg, ""))
    out.append("#")
    out.append("# Collective test concluded: %s" % program)
    out.append("")


def new_format_allreduce_h200():
    rng = random.Random(14)
    n = 8
    factor = 2 * (n - 1) / n
    pieces = [(0, 16.0, 3.0), (1 << 16, 30.0, 60.0), (1 << 23, 50.0, 478.0)]
    devices = [("h200-node3", d, [0x19, 0x3b, 0x4c, 0x5d, 0x9b, 0xbb, 0xcb, 0xdb][d], "NVIDIA H200") for d in range(8)]
    out = ["# made by us from the format in NVIDIA/nccl-tests src/util.cu (2.17); numbers from a model, not measured"]
    new_header(out, "all_reduce_perf", 1, 8, 8, 17179869184, devices)
    out.append("#")
    column_header(out)
    avg = modern_rows(out, 8, 17179869184, 4, "float", "sum", -1, factor, pieces, rng)
    new_footer(out, avg, "all_reduce_perf")
    write("nccl_tests_2.17_all_reduce_h200.log", out)


def new_format_reduce_scatter_per_iter():
    """Current releases with per-iteration timing (-I): four i_* columns after each #wrong."""
    rng = random.Random(15)
    n = 8
    factor = (n - 1) / n
    pieces = [(0, 14.0, 2.5), (1 << 18, 35.0, 362.0)]
    devices = [("h200-node3", d, 0x19 + 0x10 * d, "NVIDIA H200") for d in range(8)]
    out = ["# made by us from the format in NVIDIA/nccl-tests src/util.cu (per-iteration report); numbers from a model, "
           "not measured"]
    new_header(out, "reduce_scatter_perf", 1, 8, 1024, 4294967296, devices,
               "# Per-Iteration Report: CUDA event timing; i_* uses max over process rows ")
    out.append("#")
    column_header(out, per_iter=True)
    avg = modern_rows(out, 1024, 4294967296, 4 * n, "float", "sum", -1, factor, pieces, rng, per_iter=True)
    new_footer(out, avg, "reduce_scatter_perf")
    write("nccl_tests_2.17_reduce_scatter_h200_per_iter.log", out)


def new_format_sendrecv_two_nodes():
    """sendrecv_perf with one rank on each of two nodes (MPI), run with -c 0 so #wrong prints N/A."""
    rng = random.Random(16)
    pieces = [(0, 9.0, 1.2), (1 << 15, 14.0, 22.0), (1 << 22, 30.0, 48.5)]
    devices = [("h200-node3", 0, 0x19, "NVIDIA H200"), ("h200-node4", 0, 0x19, "NVIDIA H200")]
    out = ["# made by us from the format in NVIDIA/nccl-tests src/util.cu (2.17, MPI, -c 0); numbers from a model, "
           "not measured"]
    new_header(out, "sendrecv_perf", 1, 1, 8, 4294967296, devices)
    out.append("#")
    column_header(out)
    avg = modern_rows(out, 8, 4294967296, 4, "float", "sum", -1, 1.0, pieces, rng, na=True)
    new_footer(out, avg, "sendrecv_perf")
    write("nccl_tests_2.17_sendrecv_h200_2nodes.log", out)


def bad_files():
    n = 8
    factor = 2 * (n - 1) / n
    pieces = [(0, 16.0, 3.0), (1 << 16, 30.0, 60.0), (1 << 23, 50.0, 478.0)]
    devices = [("h200-node3", d, 0x19 + d, "NVIDIA H200") for d in range(8)]

    def start(comment):
        out = ["# made by us from the format in NVIDIA/nccl-tests src/util.cu; " + comment]
        new_header(out, "all_reduce_perf", 1, 8, 8, 1048576, devices)
        out.append("#")
        column_header(out)
        return out

    # The run was killed: rows end and there is no footer.
    out = start("cut short after its last row (no footer)")
    modern_rows(out, 8, 1048576, 4, "float", "sum", -1, factor, pieces, random.Random(21))
    write("bad_truncated_no_footer.log", out)

    # The copy stops in the middle of a row.
    out = start("cut short in the middle of a row")
    modern_rows(out, 8, 1048576, 4, "float", "sum", -1, factor, pieces, random.Random(22))
    out[-1] = out[-1][:48]
    write("bad_partial_row.log", out)

    # Wrong results at 4096 bytes in-place.
    out = start("one row reports wrong elements")
    avg = modern_rows(out, 8, 1048576, 4, "float", "sum", -1, factor, pieces, random.Random(23), wrong_at=4096)
    new_footer(out, avg, "all_reduce_perf")
    write("bad_wrong_results.log", out)

    # Two GPU models in one run (MPI over two different nodes).
    mixed = [("h200-node3", d, 0x19 + d, "NVIDIA H200") for d in range(4)] + \
            [("h100-node9", d, 0x19 + d, "NVIDIA H100 80GB HBM3") for d in range(4)]
    out = ["# made by us from the format in NVIDIA/nccl-tests src/util.cu; ranks on two GPU models"]
    new_header(out, "all_reduce_perf", 1, 4, 8, 1048576, mixed)
    out.append("#")
    column_header(out)
    avg = modern_rows(out, 8, 1048576, 4, "float", "sum", -1, factor, pieces, random.Random(24))
    new_footer(out, avg, "all_reduce_perf")
    write("bad_mixed_gpus.log", out)

    # NCCL failed before the first size: header, an error, no rows.
    out = start("NCCL failed before the first size")
    out.append("h200-node3: Test NCCL failure common.cu:1047 'unhandled system error (run with NCCL_DEBUG=INFO for "
               "details) / '")
    out.append(" .. h200-node3 pid 91000: Test failure common.cu:900")
    write("bad_no_rows.log", out)


if __name__ == "__main__":
    old_format_allreduce()
    old_format_allgather()
    mid_format_allreduce_ring()
    new_format_allreduce_h200()
    new_format_reduce_scatter_per_iter()
    new_format_sendrecv_two_nodes()
    bad_files()
