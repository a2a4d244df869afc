#!/usr/bin/env bash
# A single-node Slurm cluster in a folder, from Debian's packages (slurm-wlm, munge), for the sweep's Slurm test:
# its own munge key and socket, its own slurm.conf (this machine as the only node, with what `slurmd -C` reports),
# slurmctld and slurmd run in the background. Usage:
#   source tests/slurm/slurm_cluster.sh
#   slurm_cluster_start DIR     # exports SLURM_CONF; returns non-zero (and prints the logs) if the node never idles
#   slurm_cluster_stop DIR
# Needs root (slurmd runs jobs as their users).

slurm_cluster_start() {
  local dir=$1
  mkdir -p "$dir"/{state,spool,munge}
  chmod 700 "$dir/munge"
  # munge: a fresh key, a private socket.
  if command -v mungekey >/dev/null; then
    mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null 2>&1
  else
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
         --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" ||
    { echo "slurm_cluster: munged did not start"; cat "$dir/munge/munged.log" 2>/dev/null; return 1; }
  # Free ports for slurmctld and slurmd.
  local ports
  ports=$(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')
  local ctld_port=${ports% *} slurmd_port=${ports#* }
  local node
  node=$(slurmd -C | head -1)
  local host
  host=$(hostname -s)
  cat >"$dir/slurm.conf" <<CONF
ClusterName=railyardtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$dir/slurm.conf" || { echo "slurm_cluster: slurmctld did not start"; cat "$dir/slurmctld.log"; return 1; }
  slurmd -f "$dir/slurm.conf" || { echo "slurm_cluster: slurmd did not start"; cat "$dir/slurmd.log"; return 1; }
  local i
  for i in $(seq 1 60); do
    if sinfo -h -o '%t' 2>/dev/null | grep -qx idle; then return 0; fi
    sleep 1
  done
  echo "slurm_cluster: the node did not become idle within 60 s"
  sinfo 2>&1
  tail -20 "$dir/slurmctld.log" "$dir/slurmd.log" "$dir/munge/munged.log" 2>/dev/null
  return 1
}

slurm_cluster_stop() {
  local dir=$1 f
  for f in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  sleep 1
  return 0
}
