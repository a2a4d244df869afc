#!/usr/bin/env bash
# The report page in a browser (ctest report.browser): real runs through the railyard binary (a training step with
# its network recorded, a scenario of collectives, a sweep with failing points, a search, a plan), then
# `railyard report` on each and tests/report/check_pages.mjs opening every page in headless Chromium: no console
# error, every chart drawn (screenshots not blank), every table cell equal to the file it came from.
#   test_report.sh RAILYARD SOURCE_DIR WORK_DIR NODE_MODULES
# Chromium: $RAILYARD_CHROMIUM, else chromium or chromium-browser on the PATH. Without one the test FAILS (it is not
# skipped): scripts/dev.sh installs Debian's chromium.
set -euo pipefail
railyard=$1 src=$2 work=$3 modules=$4
here=$src/tests/report

chromium=${RAILYARD_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$chromium" ] || [ ! -x "$chromium" ]; then
  echo "FAIL: no Chromium to open the report pages in (install it: apt-get install chromium; scripts/dev.sh does, or" \
    "set RAILYARD_CHROMIUM to its path)" >&2
  exit 1
fi
if [ ! -d "$modules/playwright-core" ]; then
  echo "FAIL: $modules/playwright-core is missing: build the report_browser_deps target (npm ci of" \
    "tests/report/package-lock.json)" >&2
  exit 1
fi

rm -rf "$work"
mkdir -p "$work"
run() { # prints the command, runs it, fails the test on an exit code other than the allowed ones
  local allowed=$1
  shift
  echo "+ $*"
  local rc=0
  "$@" >"$work/last.log" 2>&1 || rc=$?
  if [[ " $allowed " != *" $rc "* ]]; then
    cat "$work/last.log"
    echo "FAIL: exit code $rc (expected $allowed): $*" >&2
    exit 1
  fi
}

run 0 "$railyard" run "$src/examples/profile_links.yaml" --out "$work/run"
run 0 "$railyard" run "$here/step_links.yaml" --out "$work/step_links"
run 0 "$railyard" run "$here/collectives.yaml" --out "$work/collectives"
# tp 3 points fail: the sweep writes its table and exits 1.
run 1 "$railyard" sweep "$here/sweep.yaml" --out "$work/sweep" -j 2
run 0 "$railyard" search "$src/examples/searches/profile_links_layouts.yaml" --out "$work/search" -j 2
run 0 "$railyard" plan "$here/plan.yaml" --out "$work/plan" -j 2

for d in run step_links collectives sweep search plan; do
  run 0 "$railyard" report "$work/$d"
done
# Again over an earlier page: replaced, not refused.
run 0 "$railyard" report "$work/run"
# A page inside a run's folder is one of the run's files: the run can write the folder again.
run 0 "$railyard" run "$src/examples/profile_links.yaml" --out "$work/run"
[ ! -e "$work/run/report.html" ] || { echo "FAIL: the run kept a stale report.html" >&2; exit 1; }
run 0 "$railyard" report "$work/run"

"${RAILYARD_NODE:-node}" "$here/check_pages.mjs" --chromium "$chromium" --modules "$modules" \
  "$work/run/report.html:run:$work/run:chart-breakdown,chart-breakdown-ranks,chart-timeline" \
  "$work/step_links/report.html:run:$work/step_links:chart-breakdown,chart-timeline,chart-hottest-links,chart-heatmap" \
  "$work/collectives/report.html:collectives:$work/collectives:chart-busbw,chart-hottest-links,chart-heatmap" \
  "$work/sweep/report.html:sweep:$work/sweep:chart-axis-0,chart-axis-1" \
  "$work/search/report.html:search:$work/search:chart-top,chart-pareto" \
  "$work/plan/report.html:plan:$work/plan:chart-plan-capex_usd,chart-capex-by-category"
