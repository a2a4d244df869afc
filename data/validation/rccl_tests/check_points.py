#!/usr/bin/env python3
"""Validate the rccl-tests points.csv (python3 stdlib only).

rccl-tests prints nccl-tests' row layout and uses its bus-bandwidth factors, and this corpus has the same columns
(`nccl_version` holds the RCCL version), so the NCCL corpus's script does the work on this folder.
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "check_points_nccl", os.path.join(HERE, "..", "nccl_tests", "check_points.py"))
_nccl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_nccl)

if __name__ == "__main__":
    sys.exit(_nccl.main(HERE))
