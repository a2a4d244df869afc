#!/usr/bin/env bash
# railyard report's refusals through the binary (ctest report.cli): a folder that is none of the outputs it reads
# (missing, empty, unknown files, a study without its table) exits 2 naming the folder and the files expected; an
# output file that is not an earlier report page is refused and left as it was; an earlier page is replaced.
#   test_report_cli.sh RAILYARD SOURCE_DIR WORK_DIR
set -uo pipefail
railyard=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# expect CODE TEXT... -- COMMAND...: the exit code and each text in what it printed
expect() {
  local code=$1
  shift
  local texts=()
  while [ "$1" != "--" ]; do
    texts+=("$1")
    shift
  done
  shift
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" -eq "$code" ] || fail "exit code $rc, expected $code: $* -> $out"
  for t in "${texts[@]}"; do
    [[ "$out" == *"$t"* ]] || fail "'$t' not in the message of $*: $out"
  done
  echo "ok (exit $rc): $*"
}
expected="search.csv (railyard search), results.csv (railyard sweep), plan.csv and bom.csv (railyard plan)"

expect 2 "$work/none" "no such folder" "$expected" -- "$railyard" report "$work/none"
mkdir "$work/empty"
expect 2 "$work/empty" "the folder is empty" "$expected" "summary.json with breakdown.csv" -- \
  "$railyard" report "$work/empty"
[ ! -e "$work/empty/report.html" ] || fail "a page was written for an empty folder"
mkdir "$work/unknown" && echo "a,b" >"$work/unknown/data.csv"
expect 2 "$work/unknown" "none of the files expected" "$expected" -- "$railyard" report "$work/unknown"
mkdir "$work/study" && echo '{"railyard_sweep":1}' >"$work/study/.railyard-sweep"
expect 2 "$work/study" "without its table" "--gather" -- "$railyard" report "$work/study"
mkdir "$work/memory" && echo '{"status":"memory_only"}' >"$work/memory/summary.json"
expect 2 "$work/memory" "summary.json without breakdown.csv or collectives.csv" -- "$railyard" report "$work/memory"
touch "$work/not_a_folder"
expect 2 "$work/not_a_folder" "not a folder" -- "$railyard" report "$work/not_a_folder"

# Output files, on a plan's folder (its bill of materials only: nothing simulated).
"$railyard" plan "$src/tests/report/plan.yaml" --out "$work/plan" --bom-only >/dev/null || fail "railyard plan failed"
echo "my notes" >"$work/plan/notes.html"
expect 2 "$work/plan/notes.html" "not a page railyard report wrote" -- \
  "$railyard" report "$work/plan" -o "$work/plan/notes.html"
[ "$(cat "$work/plan/notes.html")" = "my notes" ] || fail "notes.html was changed"
mkdir "$work/plan/folder.html"
expect 2 "$work/plan/folder.html" "a folder of that name is in the way" -- \
  "$railyard" report "$work/plan" -o "$work/plan/folder.html"
expect 2 "$work/missing/page.html" -- "$railyard" report "$work/plan" -o "$work/missing/page.html"
expect 0 "report (plan): wrote $work/plan/report.html" -- "$railyard" report "$work/plan"
expect 0 "wrote $work/page.html" -- "$railyard" report "$work/plan" -o "$work/page.html"
expect 0 "wrote $work/page.html" -- "$railyard" report "$work/plan" -o "$work/page.html" # an earlier page: replaced
leftover=$(find "$work" -name '.railyard-*.tmp' | head -1)
[ -z "$leftover" ] || fail "a temporary file was left: $leftover"
# A table cut short is refused naming the file and the line.
{ head -n 2 "$work/plan/bom.csv"; printf 'rail,gpu,h100_sxm\r\n'; } >"$work/bom.csv" && mv "$work/bom.csv" "$work/plan/bom.csv"
expect 2 "$work/plan/bom.csv:3" "the row has" -- "$railyard" report "$work/plan"

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
