#!/usr/bin/env bash
# real-fairness.sh DIR [--rounds N] [--secs S] [--bs SIZE] [--modes "d2fq bfq kernel-bfq kernel"]:
# three tenants, each one fio process (4 threads of random direct reads, psync), with
# weights 100:300:400 — on `sluice mount` under d2fq and bfq, and on BACKING directly
# with the kernel's BFQ (kernel-bfq) and the disk's own scheduler (kernel). Each
# tenant's bandwidth share against its weight share, medians over alternating rounds.
#
# Weights: cgroup v2 `io.weight` 100/300/400 when /sys/fs/cgroup is cgroup2 with the io
# controller and writable; otherwise (said so in the output) `ionice -c2 -n 7/5/4`,
# which the mount maps to weights 1/3/4 (8 − level) and BFQ to 10/30/40
# ((8 − level) × 10): the same 1:3:4. The disk's scheduler is set to bfq for the
# kernel-bfq runs and restored on exit (trap).
# Mode d2fq-cap: d2fq on a mount with `--ring-cap $RING_CAP` (default 4), so requests
# wait at the port's weighted round-robin arbiter and D2FQ's queue classes matter.
# Defaults: --rounds 3 --secs 10 --bs 64k.
set -euo pipefail
usage() {
    echo "usage: scripts/real-fairness.sh DIR [--rounds N] [--secs S] [--bs SIZE] [--modes \"d2fq d2fq-cap bfq kernel-bfq kernel\"]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
case $1 in -h | --help) usage ;; esac
ARG_DIR=$1
shift
ROUNDS=3 SECS=10 BS=64k MODES="d2fq bfq kernel-bfq kernel" RING_CAP=${RING_CAP:-4}
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage
    case $1 in
    --rounds) ROUNDS=$2 ;;
    --secs) SECS=$2 ;;
    --bs) BS=$2 ;;
    --modes) MODES=$2 ;;
    *) echo "unknown option $1" >&2; usage ;;
    esac
    shift 2
done
for v in ROUNDS SECS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, not '${!v}'" >&2; exit 2; }
done
[[ $BS =~ ^[0-9]+[kKmM]?$ ]] || { echo "--bs must be a size like 64k, not '$BS'" >&2; exit 2; }
for m in $MODES; do
    case $m in d2fq | d2fq-cap | bfq | fios | none | kernel | kernel-bfq) ;; *) echo "unknown mode $m" >&2; exit 2 ;; esac
done

. "$(dirname "$0")/real-apps-lib.sh"
setup_dirs "$ARG_DIR"
apt_need fio fio
WEIGHTS=(100 300 400)
LEVELS=(7 5 4)

# cgroup v2 with the io controller, writable?
CG=
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] &&
    grep -qw io /sys/fs/cgroup/cgroup.controllers 2>/dev/null &&
    [ -w /sys/fs/cgroup/cgroup.subtree_control ]; then
    CG=/sys/fs/cgroup
    echo "+io" >"$CG/cgroup.subtree_control" 2>/dev/null || CG=
fi
if [ -n "$CG" ]; then
    HOW="cgroup v2 io.weight ${WEIGHTS[*]} ($CG/sluice-fair-{0,1,2})"
    for t in 0 1 2; do
        mkdir -p "$CG/sluice-fair-$t"
        echo "default ${WEIGHTS[$t]}" >"$CG/sluice-fair-$t/io.weight"
    done
else
    HOW="ionice -c2 -n ${LEVELS[*]} (weights 1:3:4): /sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup 2>/dev/null) and has no writable cgroup2 io controller"
fi

# The disk under DIR and its scheduler, restored on exit.
DEV=$(df --output=source "$ARG_DIR" | tail -1)
DISK=$(basename "$(readlink -f "$DEV")")
[ -e "/sys/block/$DISK" ] || DISK=$(lsblk -no pkname "$DEV" 2>/dev/null | head -1)
SCHED_FILE=/sys/block/$DISK/queue/scheduler
SCHED0=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$SCHED_FILE" 2>/dev/null || true)
restore() {
    cleanup_mount
    if [ -n "$SCHED0" ] && [ -w "$SCHED_FILE" ]; then echo "$SCHED0" >"$SCHED_FILE" || true; fi
    if [ -n "$CG" ]; then
        for t in 0 1 2; do rmdir "$CG/sluice-fair-$t" 2>/dev/null || true; done
    fi
}
trap restore EXIT
trap 'exit 130' INT TERM
set_sched() {
    [ -w "$SCHED_FILE" ] || die "$SCHED_FILE is not writable"
    grep -qw "$1" "$SCHED_FILE" || die "the disk $DISK offers no $1 ($(cat "$SCHED_FILE"))"
    echo "$1" >"$SCHED_FILE"
}

for t in 0 1 2; do
    [ -f "$B/tenant$t" ] || fio --name=lay --filename="$B/tenant$t" --size=1g --rw=write --bs=1m \
        --direct=1 --output=/dev/null
done

tenant() { # T WHERE TAG: one tenant's fio, its weight from its cgroup or ionice level
    local t=$1 cmd=(fio --name="tenant$1" --filename="$2/tenant$1" --rw=randread --bs="$BS"
        --direct=1 --ioengine=psync --thread --numjobs=4 --group_reporting --time_based
        --runtime="$SECS" --output-format=json --output="$OUT/fair-$3-t$1.json")
    if [ -n "$CG" ]; then
        sh -c 'echo $$ >"$0" && exec "$@"' "$CG/sluice-fair-$t/cgroup.procs" "${cmd[@]}"
    else
        ionice -c2 -n "${LEVELS[$t]}" "${cmd[@]}"
    fi
}

run() { # MODE ROUND
    local mode=$1 r=$2 tag=$1-r$2 where=$B pids=() t
    case $mode in
    kernel) set_sched "$SCHED0" ;;
    kernel-bfq) set_sched bfq ;;
    d2fq-cap)  # d2fq with the port's WRR arbiter in play: --ring-cap keeps requests waiting
        set_sched "$SCHED0"; mount_it d2fq "fair-$tag" --cores 2 --ring-cap "$RING_CAP"; where=$M ;;
    *) set_sched "$SCHED0"; mount_it "$mode" "fair-$tag" --cores 2; where=$M ;;
    esac
    for t in 0 1 2; do
        tenant "$t" "$where" "$tag" &
        pids+=($!)
    done
    for t in "${pids[@]}"; do wait "$t"; done
    case $mode in kernel*) ;; *) unmount_it ;; esac
    set_sched "$SCHED0"
    echo "round $r/$ROUNDS $mode: $(for t in 0 1 2; do python3 -c 'import json,sys; print("%.0f" % (json.load(open(sys.argv[1]))["jobs"][0]["read"]["bw"] / 1024), end="")' "$OUT/fair-$tag-t$t.json"; printf ' '; done)MiB/s, load $(cut -d' ' -f1 /proc/loadavg)" >&2
}

read -ra MODE_LIST <<<"$MODES"
{
    echo "== scripts/real-fairness.sh $ARG_DIR --rounds $ROUNDS --secs $SECS --bs $BS --modes \"$MODES\""
    echo "weights: $HOW"
    echo "tenants: fio --rw=randread --bs=$BS --direct=1 --ioengine=psync --thread --numjobs=4 each"
    machine_state
} | tee "$OUT/fair-machine.txt" >&2
for ((r = 1; r <= ROUNDS; r++)); do
    n=${#MODE_LIST[@]}
    for ((i = 0; i < n; i++)); do run "${MODE_LIST[$(((i + r - 1) % n))]}" "$r"; done
done
echo "after: uptime:$(uptime | sed 's/.*up/ up/')" | tee -a "$OUT/fair-machine.txt" >&2

python3 - "$OUT" "$ROUNDS" $MODES <<'PY' | tee "$OUT/fair-report.txt"
import json, statistics, sys
out, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
w = [100, 300, 400]
ws = [x / sum(w) for x in w]
print(f"bandwidth shares of three tenants with weights 100:300:400 (shares "
      f"{ws[0]:.3f} / {ws[1]:.3f} / {ws[2]:.3f}); medians over {rounds} rounds")
print("| config | MiB/s (t100 / t300 / t400) | total MiB/s | shares | max |share − weight share| / weight share |")
print("|---|---|---|---|---|")
for m in modes:
    bws = [[json.load(open(f"{out}/fair-{m}-r{r}-t{t}.json"))["jobs"][0]["read"]["bw"] / 1024
            for t in range(3)] for r in range(1, rounds + 1)]
    shares = [[b / sum(bw) for b in bw] for bw in bws]
    mb = [statistics.median(bw[t] for bw in bws) for t in range(3)]
    sh = [statistics.median(s[t] for s in shares) for t in range(3)]
    err = max(abs(sh[t] - ws[t]) / ws[t] for t in range(3))
    print(f"| {m} | {mb[0]:.0f} / {mb[1]:.0f} / {mb[2]:.0f} | {sum(mb):.0f} | "
          f"{sh[0]:.3f} / {sh[1]:.3f} / {sh[2]:.3f} | {err:.2f} |")
PY
