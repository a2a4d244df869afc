#!/usr/bin/env bash
# Railyard set-up and entry points. Idempotent: installs only what is missing, reuses the build folder.
#   bash scripts/dev.sh example   install, build, run the default example scenario (examples/default.yaml)
#   bash scripts/dev.sh test      install, build, run every test (what .ci/run calls)
#   bash scripts/dev.sh build     install and build only
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${RAILYARD_BUILD_DIR:-$ROOT/build}
JOBS=${RAILYARD_JOBS:-$(nproc)}

PACKAGES=(build-essential cmake pkg-config libsimgrid-dev libboost-graph-dev libyaml-cpp-dev libeigen3-dev
          libgtest-dev libcli11-dev nlohmann-json3-dev libfmt-dev libprotobuf-dev protobuf-compiler zlib1g-dev libarchive-dev python3
          python3-matplotlib) # python3-matplotlib: the notebook tests (examples/CMakeLists.txt) draw their PNGs

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
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
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD" -j "$JOBS"
}

case "${1:-}" in
  example)
    build
    rm -rf "$ROOT/out/default"
    "$BUILD/cli/railyard" run "$ROOT/examples/default.yaml" --out "$ROOT/out/default"
    ;;
  test)
    build
    cd "$BUILD"
    ctest --output-on-failure -j "$JOBS" --timeout 900
    ;;
  build)
    build
    ;;
  *)
    echo "usage: bash scripts/dev.sh example|test|build" >&2
    exit 2
    ;;
esac
