#!/usr/bin/env bash
# sluice against what a Linux user already has, on this machine's disk (issue 44).
#
#   scripts/bench-vs-kernel.sh DIR            DIR: a directory on the disk to measure
#   ROUNDS=5 RUNTIME=3 scripts/bench-vs-kernel.sh DIR
#   STACKS="fio/rt/bfq sluice/rcp:limit=8/none" scripts/bench-vs-kernel.sh DIR
#
# The job is sluice's main job (jobs/default.fio): a 4 KiB QD1 random reader at 5 000
# IOPS, the critical tenant, beside four 128 KiB random writers at QD32, each on its own
# 1 GiB file in DIR (the same files for every stack: laid out once by fio, reused).
# Stacks, each `TOOL/POLICY/KERNEL-SCHEDULER`, run one after the other in every round,
# rounds alternating, so drift on a shared machine falls on all of them alike:
#   fio/-/mq-deadline   fio's io_uring engine, the kernel's default scheduler, no priorities
#   fio/-/kyber         kyber (per-class latency targets, depth adapted)
#   fio/rt/bfq          BFQ, the reader in the realtime class (fio's prioclass=1,
#                       what `ionice -c1` gives a program)
#   sluice/P/S          `sluice run --policy P` with the kernel's scheduler S below it
# Printed per stack: the critical reader's mean and p99 latency (issue to completion:
# fio's lat, sluice's lat), the writers' bandwidth, as the median over the rounds with
# the min–max, and the ratios against fio/rt/bfq (latency) and sluice/none (writers).
# The disk's scheduler is set per stack (root) and restored on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:?usage: scripts/bench-vs-kernel.sh DIR (a directory on the disk to measure)}
ROUNDS=${ROUNDS:-5}
RUNTIME=${RUNTIME:-3}
STACKS=${STACKS:-"fio/-/mq-deadline fio/-/kyber fio/rt/bfq sluice/none/mq-deadline sluice/rcp/mq-deadline sluice/ld/mq-deadline sluice/none/none sluice/rcp/none sluice/ld/none"}
[ -d "$DIR" ] || { echo "error: $DIR: not a directory; create it first" >&2; exit 2; }
DIR=$(cd "$DIR" && pwd)/sluice-vs-kernel
mkdir -p "$DIR"

if ! command -v fio >/dev/null; then
    echo "== installing fio"
    apt-get update -qq && apt-get install -y -qq fio >/dev/null
fi
if [ -z "${SLUICE:-}" ]; then
    cargo build --release --quiet
    SLUICE=${CARGO_TARGET_DIR:-target}/release/sluice
fi

# The block device under DIR and its scheduler file.
DEV=$(df --output=source "$DIR" | tail -1)
DISK=$(lsblk -no PKNAME "$DEV" 2>/dev/null | head -1)
[ -n "$DISK" ] || DISK=$(basename "$DEV")
SCHED=/sys/block/$DISK/queue/scheduler
if [ ! -w "$SCHED" ]; then
    echo "error: $SCHED cannot be written (not root, or DIR is not on a local disk); the" \
         "kernel stacks need it" >&2
    exit 2
fi
ORIG=$(sed -E 's/.*\[([^]]+)\].*/\1/' "$SCHED")
WORK=$(mktemp -d)
restore() {
    echo "$ORIG" >"$SCHED" 2>/dev/null || true
    rm -rf "$WORK"
}
trap restore EXIT
trap 'exit 130' INT TERM
set_sched() {
    grep -qw "$1" "$SCHED" || { echo "error: $SCHED lacks $1 ($(cat "$SCHED"))" >&2; exit 2; }
    echo "$1" >"$SCHED"
}

# One job text; fio and sluice differ only in how the reader is marked critical.
job() { # critical-marker
    cat <<EOF
; scripts/bench-vs-kernel.sh: jobs/default.fio on files in $DIR
[global]
direct=1
time_based
runtime=$RUNTIME
ramp_time=100ms
size=1g

[critical-reader]
rw=randread
bs=4k
iodepth=1
rate_iops=5000
$1

[writers]
rw=randwrite
bs=128k
iodepth=32
numjobs=4
EOF
}
# fio: its io_uring engine, the files in DIR, percentiles of lat (issue to completion).
fio_job() {
    printf '[global]\nioengine=io_uring\ndirectory=%s\nlat_percentiles=1\n' "$DIR"
    job "$1" | sed 1,2d
}
fio_job "" >"$WORK/fio-plain.fio"
fio_job "prioclass=1" >"$WORK/fio-rt.fio"
job "sluice_critical=1" >"$WORK/sluice.fio"

if ! ls "$DIR"/writers.3.0 >/dev/null 2>&1; then
    echo "== laying out 5 GiB in $DIR (once)"
    fio --name=layout --directory="$DIR" --size=1g --rw=write --bs=1m --direct=1 \
        --ioengine=io_uring --iodepth=8 --filename_format='critical-reader.0.0' \
        --output=/dev/null
    for i in 0 1 2 3; do
        fio --name=layout --directory="$DIR" --size=1g --rw=write --bs=1m --direct=1 \
            --ioengine=io_uring --iodepth=8 --filename_format="writers.$i.0" --output=/dev/null
    done
fi

RESULTS=$WORK/results.tsv
: >"$RESULTS"
for r in $(seq 1 "$ROUNDS"); do
    for s in $STACKS; do
        IFS=/ read -r tool pol ks <<<"$s"
        set_sched "$ks"
        out=$WORK/out.json
        case $tool in
            fio)
                jf=$WORK/fio-plain.fio
                [ "$pol" = rt ] && jf=$WORK/fio-rt.fio
                fio --output-format=json --output="$out" "$jf" >/dev/null ;;
            sluice)
                "$SLUICE" run "$WORK/sluice.fio" -D "$DIR" --allow-write-existing \
                    --policy "$pol" --json "$out" -q >/dev/null ;;
            *) echo "error: stack $s: tool must be fio or sluice" >&2; exit 2 ;;
        esac
        python3 - "$out" "$s" "$r" >>"$RESULTS" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
jobs = doc["jobs"]  # fio's shape, which sluice's JSON has too (docs/metrics.md)
def lat(d):  # issue (or submit) to completion, ns: fio's and sluice's lat_ns
    return d.get("lat_ns") or d["clat_ns"]
crit = [j for j in jobs if j["jobname"] == "critical-reader"][0]["read"]
l = lat(crit)
p = l.get("percentile", {})
p99 = p.get("99.000000", p.get("99.0", 0))
wbw = sum(j["write"]["bw_bytes"] for j in jobs if j["jobname"] == "writers")
print(f"{sys.argv[2]}\t{sys.argv[3]}\t{l['mean']/1e3:.1f}\t{p99/1e3:.1f}\t{wbw/2**20:.1f}")
PY
        tail -1 "$RESULTS" | awk -F'\t' '{printf "round %s  %-24s read mean %7s us  p99 %7s us  writers %7s MiB/s\n", $2, $1, $3, $4, $5}'
    done
done

python3 - "$RESULTS" "$STACKS" "$ROUNDS" "$RUNTIME" <<'PY'
import statistics as st, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
stacks = sys.argv[2].split()
by = {s: [r for r in rows if r[0] == s] for s in stacks}
def col(s, i):
    return [float(r[i]) for r in by[s]]
def med(s, i):
    v = col(s, i)
    return st.median(v) if v else float("nan")
print(f"\nmedians over {sys.argv[3]} interleaved rounds of {sys.argv[4]} s (min–max):")
print(f"{'stack':<26}{'read mean µs':>22}{'read p99 µs':>22}{'writers MiB/s':>24}{'p99/bfq-rt':>12}{'wr/sluice-none':>16}")
ref_lat = med("fio/rt/bfq", 3) if "fio/rt/bfq" in by else None
ref_bw = None
for s in stacks:
    if s.startswith("sluice/none/"):
        ref_bw = med(s, 4)
        break
for s in stacks:
    cells = []
    for i in (2, 3, 4):
        v = col(s, i)
        cells.append(f"{st.median(v):.1f} ({min(v):.0f}–{max(v):.0f})")
    r1 = f"{med(s, 3) / ref_lat:.2f}" if ref_lat else "-"
    r2 = f"{med(s, 4) / ref_bw:.2f}" if ref_bw else "-"
    print(f"{s:<26}{cells[0]:>22}{cells[1]:>22}{cells[2]:>24}{r1:>12}{r2:>16}")
PY
