#!/usr/bin/env bash
# railyard sweep --slurm against a real single-node Slurm cluster (slurm_cluster.sh, Debian's slurm-wlm and munge):
#  1. the example sweep through Slurm (array tasks of 3 points, gather job) gives results.csv byte for byte equal to
#     the same sweep run locally with -j 2;
#  2. a sweep with a point that fails: the same table both ways, the failure listed with its error, exit 1;
#  3. a Slurm that does not answer, and one whose commands are missing: exit 2, a clear message, nothing submitted and
#     no folder written.
# Usage: test_slurm_sweep.sh RAILYARD SOURCE_DIR. Exit 77 (skipped) when not root: slurmd must run as root.
set -u
railyard=$1
src=$2
if [ "$(id -u)" != 0 ]; then
  echo "skipped: a Slurm cluster needs root to run slurmd (run as root, as .ci/run does)"
  exit 77
fi
for tool in munged slurmctld slurmd sbatch sinfo; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/dev.sh installs slurm-wlm and munge)"; exit 1; }
done
work=$(mktemp -d /tmp/railyard_slurm_XXXXXX)
source "$src/tests/slurm/slurm_cluster.sh"
trap 'slurm_cluster_stop "$work/cluster"; rm -rf "$work"' EXIT
slurm_cluster_start "$work/cluster" || { echo "FAIL: the Slurm cluster did not start"; exit 1; }
fail=0
check() { # check "what" command...: a failed check is reported, the others still run
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

# 1. The example sweep, locally and through Slurm.
"$railyard" sweep "$src/examples/sweeps/layouts.yaml" --out "$work/local" -j 2 >"$work/local.out" 2>&1
check "local sweep exits 0" test $? -eq 0
"$railyard" sweep "$src/examples/sweeps/layouts.yaml" --out "$work/slurm" --slurm --slurm-batch 3 --wait \
  >"$work/slurm.out" 2>&1
rc=$?
cat "$work/slurm.out"
check "slurm sweep exits 0" test $rc -eq 0
check "two array tasks of at most 3 points" test "$(ls "$work/slurm/slurm"/task-*.log | wc -l)" -eq 2
check "the tables are identical" cmp "$work/local/results.csv" "$work/slurm/results.csv"
check "four points ok" test "$(grep -c ',ok,' "$work/slurm/results.csv")" -eq 4

# 1b. The options that shape the jobs: partition, account, time, setup lines and the binary the tasks run.
"$railyard" sweep "$src/examples/sweeps/layouts.yaml" --out "$work/opts" --slurm --wait --slurm-partition debug \
  --slurm-account railyard --slurm-time 00:30:00 --slurm-setup 'export RAILYARD_SETUP_RAN=1' \
  --slurm-railyard "$railyard" >"$work/opts.out" 2>&1
rc=$?
cat "$work/opts.out"
check "slurm sweep with job options exits 0" test $rc -eq 0
check "its table equals the local one" cmp "$work/local/results.csv" "$work/opts/results.csv"
check "the setup lines open the task script" grep -q "^export RAILYARD_SETUP_RAN=1$" "$work/opts/slurm/array.sh"
check "the gather job runs them too" grep -q "^export RAILYARD_SETUP_RAN=1$" "$work/opts/slurm/gather.sh"
check "the tasks run the binary given" grep -qF "'$railyard' run" "$work/opts/slurm/array.sh"
# A partition the cluster does not have: sbatch's refusal, exit 2.
"$railyard" sweep "$src/examples/sweeps/layouts.yaml" --out "$work/nopart" --slurm --slurm-partition nosuch \
  >"$work/nopart.out" 2>&1
rc=$?
cat "$work/nopart.out"
check "an unknown partition exits 2" test $rc -eq 2
check "the message says sbatch refused it" grep -q "sbatch refused the array job" "$work/nopart.out"

# 2. A point that fails (0.5 GiB of GPU memory), the same table both ways.
cat >"$work/fails.yaml" <<YAML
base: $src/examples/profile_links.yaml
axes:
  - {key: workload.training.memory_limit_GiB, values: [80, 0.5]}
YAML
"$railyard" sweep "$work/fails.yaml" --out "$work/fl" >/dev/null 2>&1
check "local sweep with a failed point exits 1" test $? -eq 1
"$railyard" sweep "$work/fails.yaml" --out "$work/fs" --slurm --wait >"$work/fs.out" 2>&1
rc=$?
cat "$work/fs.out"
check "slurm sweep with a failed point exits 1" test $rc -eq 1
check "the failed point is listed with its error" grep -q 'failed,0.5,.*does not fit in GPU memory.*(exit code 2)' \
  "$work/fs/results.csv"
check "the tables with a failed point are identical" cmp "$work/fl/results.csv" "$work/fs/results.csv"

# 3. Slurm unreachable: a configuration whose controller port nobody listens on; then no Slurm commands at all.
jobs_before=$(squeue -h -t all | wc -l)
sed -E 's/^SlurmctldPort=.*/SlurmctldPort=1/' "$SLURM_CONF" >"$work/dead.conf"
SLURM_CONF=$work/dead.conf timeout 300 "$railyard" sweep "$src/examples/sweeps/layouts.yaml" --out "$work/dead" --slurm \
  >"$work/dead.out" 2>&1
rc=$?
cat "$work/dead.out"
check "unreachable Slurm exits 2" test $rc -eq 2
check "the message says Slurm is not reachable and nothing was submitted" \
  grep -q "Slurm is not reachable.*nothing was submitted" "$work/dead.out"
check "no folder written" test ! -e "$work/dead"
env PATH=/nonexistent "$railyard" sweep "$src/examples/sweeps/layouts.yaml" --out "$work/nopath" --slurm \
  >"$work/nopath.out" 2>&1
rc=$?
cat "$work/nopath.out"
check "missing Slurm commands exit 2" test $rc -eq 2
check "the message names sbatch" grep -q "sbatch is not on the PATH" "$work/nopath.out"
check "nothing was submitted" test "$(squeue -h -t all | wc -l)" -eq "$jobs_before"
exit $fail
