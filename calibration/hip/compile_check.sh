#!/usr/bin/env bash
# Compiles the calibration programs of calibration/cuda as HIP (through gpu_runtime.hpp, gpu_blaslt.hpp and
# gpu_ccl.hpp) for an AMD GPU target this hipcc knows, and links them: the check that the one-source port still builds,
# on a machine without an AMD GPU. Run by ctest as calibration.hip_compile.
#
#   bash calibration/hip/compile_check.sh SOURCE_DIR OUT_DIR
#
# Exit 77 (ctest's SKIP_RETURN_CODE) without hipcc. gemm_bench needs hipBLASLt and nccl_sweep RCCL, which come with
# ROCm but not with Debian's hipcc package; without their headers they are reported as not checked, not as failures.
set -uo pipefail
SRC=${1:?usage: compile_check.sh SOURCE_DIR OUT_DIR}
OUT=${2:?usage: compile_check.sh SOURCE_DIR OUT_DIR}
HIPCC=${HIPCC:-$(command -v hipcc || true)}
if [ -z "$HIPCC" ]; then
  echo "hipcc not found: HIP compile check skipped (apt-get install hipcc libamdhip64-dev, or install ROCm)"
  exit 77
fi
mkdir -p "$OUT"
# rocm_agent_enumerator, which hipcc may call, prints a traceback on machines without /sys/class/kfd; keep it out.
quiet() { "$@" 2> >(grep -v -e rocm_agent_enumerator -e Traceback -e '^  File ' -e '^    ' -e '^FileNotFoundError' >&2); }

# MI300X is gfx942 (ROCm 6 and later know it); Debian bookworm's hipcc 5.2 (clang 15) stops at gfx940/gfx90a.
ARCH=
printf '#include <hip/hip_runtime.h>\n__global__ void k() {}\n' >"$OUT/probe.hip"
for a in ${RAILYARD_HIP_ARCH:-gfx942 gfx940 gfx90a}; do
  if quiet "$HIPCC" -x hip --offload-arch="$a" -c "$OUT/probe.hip" -o "$OUT/probe.o" 2>/dev/null; then
    ARCH=$a
    break
  fi
done
if [ -z "$ARCH" ]; then
  echo "error: $HIPCC compiles for none of gfx942, gfx940, gfx90a" >&2
  exit 1
fi
echo "hipcc: $HIPCC, target $ARCH"

has_header() { printf '#include <%s>\n' "$1" | quiet "$HIPCC" -x hip --offload-arch="$ARCH" -E - -o /dev/null 2>/dev/null; }

status=0
build() { # build NAME EXTRA_LIBS...
  local name=$1
  shift
  if quiet "$HIPCC" -x hip --offload-arch="$ARCH" -std=c++17 -O2 -Wall -Wextra -Wno-unused-parameter -Werror \
    -I"$SRC/calibration/cuda" "$SRC/calibration/cuda/$name.cu" -o "$OUT/$name" "$@"; then
    echo "compiled and linked: $name"
  else
    echo "FAILED: $name" >&2
    status=1
  fi
}
build peer_copy
build mem_bench
if has_header hipblaslt/hipblaslt.h; then build gemm_bench -lhipblaslt; else
  echo "not checked: gemm_bench (no hipblaslt/hipblaslt.h: hipBLASLt is part of ROCm, not of Debian's hipcc)"
fi
if has_header rccl/rccl.h; then build nccl_sweep -lrccl; else
  echo "not checked: nccl_sweep (no rccl/rccl.h: RCCL is part of ROCm, not of Debian's hipcc)"
fi
exit $status
