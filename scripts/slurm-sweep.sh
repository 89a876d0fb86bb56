#!/usr/bin/env bash
# docs/sweep.md's Slurm recipe, run for real on this machine: a private one-node Slurm
# cluster (Debian's slurm-wlm: slurmctld + slurmd on this host, its own munge daemon and
# key, ports 16817/16818, everything under DIR), `sluice sweep --list` submitted as a job
# array with the recipe's sweep.sbatch, the cells merged with `sluice sweep merge`, and
# the merged table, CSV and JSON compared byte for byte with the in-process sweep of the
# same axes.
#
#   scripts/slurm-sweep.sh [DIR]        DIR: its work directory (default target/slurm-sweep)
#   SWEEP_ARGS="--policy none,rcp --seed 1..4" scripts/slurm-sweep.sh
#
# Needs root (the daemons run as root, as CI does); installs slurm-wlm when missing. The
# daemons are stopped on exit; nothing outside DIR is written but Debian's packages.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
DIR=${1:-$REPO/target/slurm-sweep}
SWEEP_ARGS=${SWEEP_ARGS:-"--policy none,ld,rcp --seed 1..2 --set iodepth=1,8"}
[ "$(id -u)" = 0 ] || { echo "error: needs root (it starts slurmctld, slurmd and munged)" >&2; exit 2; }
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    echo "== installing slurm-wlm (slurmctld, slurmd, munge)"
    apt-get update -qq && apt-get install -y -qq slurm-wlm >/dev/null
fi
if [ -z "${SLUICE:-}" ]; then
    cargo build --release --quiet
    SLUICE=${CARGO_TARGET_DIR:-$REPO/target}/release/sluice
fi
SLUICE=$(cd "$(dirname "$SLUICE")" && pwd)/$(basename "$SLUICE")
rm -rf "$DIR"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
mkdir -p "$DIR/munge" "$DIR/state/ctld" "$DIR/state/d" "$DIR/log" "$DIR/cells" "$DIR/logs"
chmod 700 "$DIR/munge"

stop() {
    # slurmctld and slurmd stop on `scontrol shutdown`; what is left, by its pid file.
    [ -n "${SLURM_CONF:-}" ] && scontrol shutdown >/dev/null 2>&1 || true
    local f pid
    for f in "$DIR/state/d.pid" "$DIR/state/ctld.pid" "$DIR/munge/pid"; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        for _ in $(seq 1 100); do
            kill "$pid" 2>/dev/null || break
            sleep 0.1
        done
    done
}
trap stop EXIT

# Its own munge: a fresh key and socket in DIR (the system's munged, if any, untouched).
head -c 1024 /dev/urandom >"$DIR/munge/key"
chmod 600 "$DIR/munge/key"
munged --force -S "$DIR/munge/sock" --key-file="$DIR/munge/key" --pid-file="$DIR/munge/pid" \
    --seed-file="$DIR/munge/seed" --log-file="$DIR/munge/log"

HOST=$(hostname -s)
export SLURM_CONF=$DIR/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=sluice-sweep
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/sock
CredType=cred/munge
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$DIR/state/ctld
SlurmdSpoolDir=$DIR/state/d
SlurmctldPidFile=$DIR/state/ctld.pid
SlurmdPidFile=$DIR/state/d.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=$HOST CPUs=$(nproc) RealMemory=$(free -m | awk '/^Mem:/ {print $2}') State=UNKNOWN
PartitionName=sweep Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
echo "== waiting for the node to be idle"
for _ in $(seq 1 600); do
    [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && break
    sleep 0.1
done
[ "$(sinfo -h -o %T)" = idle ] || { echo "error: the node did not come up; see $DIR/log" >&2; exit 1; }

# The recipe of docs/sweep.md, in DIR: the job, the cells' commands, the array script.
cd "$DIR"
cp "$REPO/jobs/default.fio" job.fio
# shellcheck disable=SC2086
"$SLUICE" sweep job.fio $SWEEP_ARGS --list --cells-dir cells >cells.txt
N=$(wc -l <cells.txt)
cat >sweep.sbatch <<EOF
#!/bin/bash
#SBATCH --job-name=sluice-sweep
#SBATCH --cpus-per-task=1
#SBATCH --mem=1G
#SBATCH --time=00:30:00
#SBATCH --output=logs/cell-%a.out
# Task N runs line N+1 of cells.txt (cell N).
export PATH=$(dirname "$SLUICE"):\$PATH
sh -c "\$(sed -n "\$((SLURM_ARRAY_TASK_ID + 1))p" cells.txt)"
EOF
echo "== sbatch --array=0-$((N - 1)) sweep.sbatch ($N cells)"
sbatch --wait --array=0-$((N - 1)) sweep.sbatch
DONE=$(find cells -name '*.json' | wc -l)
[ "$DONE" = "$N" ] || { echo "error: $DONE of $N cells wrote their file; see $DIR/logs" >&2; exit 1; }
"$SLUICE" sweep merge cells/*.json --csv merged.csv --json merged.json >merged.txt

echo "== the same sweep in one process"
# shellcheck disable=SC2086
"$SLUICE" sweep job.fio $SWEEP_ARGS -q --csv inproc.csv --json inproc.json >inproc.txt
for x in txt csv json; do
    if ! cmp -s "merged.$x" "inproc.$x"; then
        echo "FAIL: merged.$x differs from the in-process sweep's inproc.$x" >&2
        exit 1
    fi
done
cat merged.txt
echo "PASS: $N cells run as a Slurm job array on $HOST and merged: table, CSV and JSON" \
     "byte-identical to the in-process sweep"
