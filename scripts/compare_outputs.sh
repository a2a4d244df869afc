#!/usr/bin/env bash
# Runs every example and the simulated numbers of three benchmarks with one build, into a folder, so that two builds
# (before and after a change that must not change results) can be compared byte for byte:
#
#   bash scripts/compare_outputs.sh collect BUILD_DIR OUT_DIR   # every example's output folder + bench tables
#   bash scripts/compare_outputs.sh diff OUT_A OUT_B            # exit 0 when identical, else the differences
#
# Benchmark lines that hold wall or CPU time, memory or speed ratios differ from run to run and are dropped; what is
# kept are the simulated times and the errors against the published measurements.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

collect() {
  local build=$1 out=$2
  [ -x "$build/cli/railyard" ] || { echo "compare_outputs: no $build/cli/railyard; build first" >&2; exit 2; }
  if [ -e "$out" ]; then
    echo "compare_outputs: $out exists; give a new folder" >&2
    exit 2
  fi
  mkdir -p "$out/examples" "$out/bench"
  out=$(cd "$out" && pwd)
  local f name
  for f in "$ROOT"/examples/*.yaml; do
    name=$(basename "$f" .yaml)
    "$build/cli/railyard" run "$f" --out "$out/examples/$name" 2>&1 | sed "s|$out|OUT|g" >"$out/examples/$name.stdout"
  done
  # The outputs name the scenario and profile files by absolute path: the checkout's root is written as SOURCE, so
  # two checkouts compare.
  grep -rlF --exclude=.railyard-output "$ROOT" "$out" | while read -r f; do sed -i "s|$ROOT|SOURCE|g" "$f"; done
  # Wall time, CPU time, RSS and ratios are machine-dependent: keep only lines without them.
  local drop='wall|cpu|CPU|RSS|rss|MiB|speed|x faster|ms/|s/flow|elapsed'
  # The benchmarks find the profiles relative to their own folder, as ctest and bench/README run them.
  # Table 5's rows end with the wall time of the case: dropped.
  (cd "$build/bench" && ./bench_korthikanti) 2>&1 | grep -Ev "$drop" |
    awk '/%/ && NF >= 12 { NF--; } { print }' >"$out/bench/korthikanti.txt"
  (cd "$build/bench" && ./bench_nccl_validation) 2>&1 | grep -Ev "$drop" >"$out/bench/nccl_validation.txt"
  # Its rows: GPUs, backend, flows, simulated time (ms), then wall, CPU, RSS and rates: the first four are kept.
  (cd "$build/bench" && ./bench_fluid_vs_simgrid --gpus 64,256) 2>&1 | grep -Ev "$drop" |
    awk '$2 == "fluid" || $2 == "simgrid" { print $1, $2, $3, $4; next } { print }' >"$out/bench/fluid_vs_simgrid.txt"
}

case "${1:-}" in
  collect) collect "$2" "$3" ;;
  diff)
    # .railyard-output records the command line (its paths differ between the two folders).
    diff -r --exclude=.railyard-output "$2" "$3" && echo "compare_outputs: identical ($2, $3)"
    ;;
  *)
    echo "usage: bash scripts/compare_outputs.sh collect BUILD_DIR OUT_DIR | diff OUT_A OUT_B" >&2
    exit 2
    ;;
esac
