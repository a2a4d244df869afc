#!/usr/bin/env bash
# Measures this machine's GPUs with the programs of calibration/cuda and fits a Railyard profile from them. On an
# AMD machine (rocm-smi present, or hipcc without nvcc/nvidia-smi) the same programs are built as HIP
# (calibration/hip: build/calibration/hip/*) and nccl_sweep measures RCCL; set RAILYARD_GPU=cuda or hip to choose.
#
#   bash calibration/run_on_gpu.sh OUT_DIR [BUILD_DIR] [SYSTEM_NAME]
#
# OUT_DIR/csv/   the measurements (mem_bench.csv, gemm_bench.csv, peer_copy.csv, nccl_sweep_<collective>.csv)
# OUT_DIR/logs/  what each program printed
# OUT_DIR/profile.yaml  the fitted profile (railyard calibrate)
#
# Sized to finish in about 8 minutes on one 8-GPU node and in under 2 on a single GPU (where nccl_sweep is skipped:
# a collective needs two GPUs). Builds the programs first if BUILD_DIR (default: build) lacks them.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: bash calibration/run_on_gpu.sh OUT_DIR [BUILD_DIR] [SYSTEM_NAME]}
BUILD=${2:-$ROOT/build}
SYSTEM=${3:-}
GPU=${RAILYARD_GPU:-}
if [ -z "$GPU" ]; then
  if command -v rocm-smi >/dev/null 2>&1 || { command -v hipcc >/dev/null 2>&1 && ! command -v nvidia-smi >/dev/null 2>&1 &&
    ! command -v nvcc >/dev/null 2>&1; }; then
    GPU=hip
  else
    GPU=cuda
  fi
fi
case $GPU in
cuda)
  BIN=$BUILD/calibration/cuda
  TARGETS=(mem_bench gemm_bench peer_copy nccl_sweep)
  ALGOS=auto,Ring,Tree,NVLS,NVLSTree,PAT
  ;;
hip)
  BIN=$BUILD/calibration/hip
  TARGETS=(mem_bench_hip gemm_bench_hip peer_copy_hip nccl_sweep_hip)
  ALGOS=auto,Ring,Tree # RCCL has no NVLS or PAT
  ;;
*)
  echo "RAILYARD_GPU=$GPU: write cuda or hip" >&2
  exit 2
  ;;
esac
echo "== GPU runtime: $GPU (programs in $BIN)"
mkdir -p "$OUT/csv" "$OUT/logs"

if [ ! -x "$BIN/gemm_bench" ] || [ ! -x "$BUILD/cli/railyard" ]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$OUT/logs/cmake.log"
  # Built one by one: without hipBLASLt or RCCL the HIP build has no gemm_bench_hip / nccl_sweep_hip target.
  for t in "${TARGETS[@]}" railyard; do
    cmake --build "$BUILD" --target "$t" -j "$(nproc)" >>"$OUT/logs/cmake.log" 2>&1 || echo "   target $t not built"
  done
fi

run() { # run NAME SECONDS COMMAND...: a program with a time limit, its output kept in logs/NAME.log
  local name=$1 limit=$2
  shift 2
  echo "== $name (limit ${limit}s)"
  local start=$SECONDS
  timeout "$limit" "$@" >"$OUT/logs/$name.log" 2>&1 || {
    echo "$name failed (exit $?); see $OUT/logs/$name.log" >&2
    tail -5 "$OUT/logs/$name.log" >&2
    return 1
  }
  echo "   done in $((SECONDS - start)) s"
}

run peer_copy 60 "$BIN/peer_copy" --out "$OUT/csv/peer_copy.csv"
GPUS=$(sed -n 's/^# gpu_count: //p' "$OUT/csv/peer_copy.csv")
echo "   $GPUS visible GPU(s): $(sed -n 's/^# gpu_model: //p' "$OUT/csv/peer_copy.csv")"
run mem_bench 60 "$BIN/mem_bench" --out "$OUT/csv/mem_bench.csv"
run gemm_bench 150 "$BIN/gemm_bench" --out "$OUT/csv/gemm_bench.csv"
if [ "${GPUS:-1}" -ge 2 ] && [ -x "$BIN/nccl_sweep" ]; then
  # Stops starting new (algorithm, protocol) pairs after 280 s and writes what it measured; a failure here still
  # leaves the kernel and link measurements to calibrate from.
  run nccl_sweep 400 "$BIN/nccl_sweep" --out "$OUT/csv" --max-bytes 1G --factor 4 --iters 20 --algos "$ALGOS" \
    --time-per-size-ms 30 --combo-timeout 60 --max-seconds 280 || echo "   continuing without collectives"
else
  echo "== nccl_sweep skipped: it needs 2 or more GPUs (or NCCL/RCCL was not found at build time)"
fi

ARGS=(calibrate --from "$OUT/csv" --out "$OUT/profile.yaml")
[ -n "$SYSTEM" ] && ARGS+=(--system "$SYSTEM")
"$BUILD/cli/railyard" "${ARGS[@]}" | tee "$OUT/logs/calibrate.log"
