#!/usr/bin/env bash
# Railyard set-up and entry points. Idempotent: installs only what is missing, reuses the build folder.
#   bash scripts/dev.sh example   install, build, run the default example scenario (examples/default.yaml)
#   bash scripts/dev.sh test      install, build, run every test, then every fuzz target (what .ci/run calls)
#   bash scripts/dev.sh fuzz      install, build and run the fuzz targets only (tests/fuzz/README.md)
#   bash scripts/dev.sh build     install and build only
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${RAILYARD_BUILD_DIR:-$ROOT/build}
BUILD_FUZZ=${RAILYARD_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
JOBS=${RAILYARD_JOBS:-$(nproc)}
FUZZ_SECONDS=${RAILYARD_FUZZ_SECONDS:-60}

# clang-14 and its runtime (libFuzzer, sanitizers) build and run the fuzz targets of tests/fuzz.
PACKAGES=(build-essential cmake pkg-config libsimgrid-dev libboost-graph-dev libyaml-cpp-dev libeigen3-dev
          libgtest-dev libcli11-dev nlohmann-json3-dev libfmt-dev libprotobuf-dev protobuf-compiler zlib1g-dev
          libarchive-dev libmuparser-dev python3 clang-14 libclang-rt-14-dev
          python3-matplotlib python3-pandas # the notebook tests (examples/CMakeLists.txt) draw their PNGs
          slurm-wlm munge    # the sweep's Slurm test starts a single-node cluster (tests/slurm/)
          nodejs npm         # railyard report's chart library comes from the npm registry at build time (studies/)
          chromium)          # the report pages' browser test (tests/report/) opens them in headless Chromium
# Packages a command already provides: NodeSource's nodejs ships npm and conflicts with Debian's npm package.
declare -A PROVIDED_BY=([nodejs]=node [npm]=npm)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    [ -n "${PROVIDED_BY[$p]:-}" ] && command -v "${PROVIDED_BY[$p]}" >/dev/null && continue
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "railyard: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

build() {
  install_packages
  # The notebooks' modules (matplotlib, pandas) are installed for Debian's python3: the tests run with that one, not
  # with whatever python3 comes first on the PATH (a pyenv or virtualenv without them).
  local python=()
  [ -x /usr/bin/python3 ] && python=(-DPython3_EXECUTABLE=/usr/bin/python3)
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${python[@]}" >/dev/null
  cmake --build "$BUILD" -j "$JOBS"
}

fuzz_compiler() {
  local c
  for c in clang++-14 clang++; do
    if command -v "$c" >/dev/null; then
      echo "$c"
      return 0
    fi
  done
  return 1
}

# Builds the libFuzzer targets of tests/fuzz in their own clang build folder and runs each for FUZZ_SECONDS. Any
# finding (crash, sanitizer report, an exception other than InputError, a hang, more than 2 GiB) fails the command.
fuzz() {
  local cxx
  if ! cxx=$(fuzz_compiler); then
    echo "railyard: WARNING: THE FUZZ TARGETS WERE NOT RUN: no clang++ here (Debian: apt-get install clang-14" \
      "libclang-rt-14-dev)" >&2
    return 0
  fi
  cmake -S "$ROOT" -B "$BUILD_FUZZ" -DCMAKE_CXX_COMPILER="$cxx" -DRAILYARD_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    >/dev/null
  cmake --build "$BUILD_FUZZ" -j "$JOBS" --target fuzz_targets
  rm -rf "$BUILD_FUZZ/seeds"
  python3 "$ROOT/tests/fuzz/make_seeds.py" "$BUILD_FUZZ/seeds"
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
  local failed=() name dict seeds
  while read -r name dict seeds; do
    local out="$BUILD_FUZZ/fuzz-runs/$name"
    mkdir -p "$out/corpus" "$out/findings"
    local args=(-max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                -artifact_prefix="$out/findings/")
    [ "$dict" = "-" ] || args+=(-dict="$ROOT/tests/fuzz/dict/$dict.dict")
    local dirs=("$out/corpus") s
    [ -d "$ROOT/tests/fuzz/corpus/$name" ] && dirs+=("$ROOT/tests/fuzz/corpus/$name")
    for s in $seeds; do
      case "$s" in
        SEEDS/*) dirs+=("$BUILD_FUZZ/seeds/${s#SEEDS/}") ;;
        *) dirs+=("$ROOT/$s") ;;
      esac
    done
    local rc=0
    # libFuzzer stops itself after FUZZ_SECONDS; the outer timeout only guards against the fuzzer itself hanging.
    timeout $((FUZZ_SECONDS + 300)) "$BUILD_FUZZ/tests/fuzz/fuzz_$name" "${args[@]}" "${dirs[@]}" >"$out/log" 2>&1 ||
      rc=$?
    local execs rate
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/log")
    if [ "$rc" -eq 0 ]; then
      echo "railyard fuzz: fuzz_$name: ${FUZZ_SECONDS} s, ${execs:-?} executions, ${rate:-?} exec/s: no finding"
    else
      echo "railyard fuzz: fuzz_$name: FINDING (exit $rc) after ${execs:-?} executions, ${rate:-?} exec/s;" \
        "log $out/log, input in $out/findings/" >&2
      grep -a -E "FINDING|ERROR: |runtime error|SUMMARY" "$out/log" | head -5 >&2 || true
      failed+=("$name")
    fi
  done < <(grep -v '^#' "$ROOT/tests/fuzz/targets.txt" | grep .)
  if ((${#failed[@]})); then
    echo "railyard fuzz: findings in ${failed[*]} (reproduce: tests/fuzz/README.md)" >&2
    return 1
  fi
}

case "${1:-}" in
  example)
    build
    "$BUILD/cli/railyard" run "$ROOT/examples/default.yaml" --out "$ROOT/out/default"
    ;;
  test)
    build
    (cd "$BUILD" && ctest --output-on-failure -j "$JOBS" --timeout 900)
    fuzz
    ;;
  fuzz)
    install_packages
    fuzz
    ;;
  build)
    build
    ;;
  *)
    echo "usage: bash scripts/dev.sh example|test|fuzz|build" >&2
    exit 2
    ;;
esac
