#!/usr/bin/env bash
# real-sqlite.sh DIR [--rounds N] [--secs S] [--bulk N] [--modes "kernel none rcp ld"]:
# a write-heavy SQLite program (experiments/real/sqlite-commits.py: WAL mode,
# synchronous=FULL, one small transaction after another) as the critical tenant
# (`ionice -c1`) beside N bulk writers (fio, `ionice -c3`, 128 KiB sequential writes,
# direct=1), on `sluice mount` under none, rcp, ld, and on BACKING directly (the
# kernel). Alternating rounds (the order rotates); medians over rounds of the commit
# latency p50/p99/p99.9, commits per second and the bulk writers' MiB/s.
# Defaults: --rounds 3 --secs 10 --bulk 4.
set -euo pipefail
usage() {
    echo "usage: scripts/real-sqlite.sh DIR [--rounds N] [--secs S] [--bulk N] [--modes \"kernel none rcp ld\"]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
case $1 in -h | --help) usage ;; esac
ARG_DIR=$1
shift
ROUNDS=3 SECS=10 BULK=4 MODES="kernel none rcp ld"
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage
    case $1 in
    --rounds) ROUNDS=$2 ;;
    --secs) SECS=$2 ;;
    --bulk) BULK=$2 ;;
    --modes) MODES=$2 ;;
    *) echo "unknown option $1" >&2; usage ;;
    esac
    shift 2
done
for v in ROUNDS SECS BULK; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer, not '${!v}'" >&2; exit 2; }
done
for m in $MODES; do
    case $m in kernel | none | rcp | ld | d2fq | bfq | fios) ;; *) echo "unknown mode $m" >&2; exit 2 ;; esac
done

. "$(dirname "$0")/real-apps-lib.sh"
setup_dirs "$ARG_DIR"
apt_need fio fio
apt_need python3 python3
python3 -c 'import sqlite3' 2>/dev/null || die "python3 has no sqlite3 module"
PROG=$REPO/experiments/real/sqlite-commits.py
trap cleanup_mount EXIT
trap 'exit 130' INT TERM

# The bulk writers' files, laid out once on BACKING (256 MiB each).
for ((i = 1; i <= BULK; i++)); do
    [ -f "$B/bulk$i" ] || fio --name=lay --filename="$B/bulk$i" --size=256m --rw=write --bs=1m \
        --direct=1 --output=/dev/null
done

run() { # MODE ROUND
    local mode=$1 r=$2 tag=$1-r$2 where=$B fpid i
    if [ "$mode" != kernel ]; then
        SLUICE_MOUNT_TRACE=1 mount_it "$mode" "sqlite-$tag" --cores 2
        where=$M
    fi
    rm -f "$B"/app.db*
    local jobs=()
    for ((i = 1; i <= BULK; i++)); do
        jobs+=(--name="bulk$i" --filename="$where/bulk$i" --rw=write --bs=128k --direct=1
            --ioengine=psync --time_based --runtime="$((SECS + 1))")
    done
    ionice -c3 fio --output-format=json --output="$OUT/bulk-$tag.json" "${jobs[@]}" &
    fpid=$!
    local n
    n=$(ionice -c1 -n0 python3 "$PROG" "$where/app.db" "$SECS" "$OUT/lat-$tag.txt")
    wait "$fpid"
    [ "$mode" = kernel ] || unmount_it
    echo "round $r/$ROUNDS $mode: $n commits in $SECS s, load $(cut -d' ' -f1 /proc/loadavg)" >&2
}

read -ra MODE_LIST <<<"$MODES"
{
    echo "== scripts/real-sqlite.sh $ARG_DIR --rounds $ROUNDS --secs $SECS --bulk $BULK --modes \"$MODES\""
    echo "python3 $(python3 -c 'import sqlite3; print("sqlite3 module, SQLite", sqlite3.sqlite_version)')"
    machine_state
} | tee "$OUT/sqlite-machine.txt" >&2
for ((r = 1; r <= ROUNDS; r++)); do
    n=${#MODE_LIST[@]}
    for ((i = 0; i < n; i++)); do run "${MODE_LIST[$(((i + r - 1) % n))]}" "$r"; done
done
echo "after: uptime:$(uptime | sed 's/.*up/ up/')" | tee -a "$OUT/sqlite-machine.txt" >&2

python3 - "$OUT" "$ROUNDS" "$SECS" $MODES <<'PY' | tee "$OUT/sqlite-report.txt"
import json, statistics, sys
out, rounds, secs, modes = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
med = statistics.median
def pct(v, p):
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] / 1000 if v else float("nan")
rows = {}
print(f"SQLite commits (ionice -c1) beside bulk writers (ionice -c3); medians over {rounds} rounds")
print("| config | commits/s | p50 ms | p99 ms | p99.9 ms | bulk MiB/s | p99 per round |")
print("|---|---|---|---|---|---|---|")
for m in modes:
    per = []
    for r in range(1, rounds + 1):
        v = sorted(int(x) for x in open(f"{out}/lat-{m}-r{r}.txt"))
        bulk = sum(j["write"]["bw"] for j in json.load(open(f"{out}/bulk-{m}-r{r}.json"))["jobs"]) / 1024
        per.append({"cps": len(v) / secs, "p50": pct(v, 50), "p99": pct(v, 99), "p999": pct(v, 99.9), "bulk": bulk})
    row = {k: med(p[k] for p in per) for k in per[0]}
    rows[m] = row
    print(f"| {m} | {row['cps']:.0f} | {row['p50']:.2f} | {row['p99']:.2f} | {row['p999']:.2f} | "
          f"{row['bulk']:.0f} | {' '.join('%.2f' % p['p99'] for p in per)} |")
print()
print("Daemon stages per class (round 1; SLUICE_MOUNT_TRACE=1), p50/p99 µs")
import os
for m in modes:
    p = f"{out}/mount-sqlite-{m}-r1.err"
    if os.path.exists(p):
        for line in open(p):
            if line.startswith("trace "):
                print(f"  {m}: {line.strip()}")
if "none" in rows and "rcp" in rows:
    n, c = rows["none"], rows["rcp"]
    print(f"rcp commit p99 / none's: {c['p99'] / n['p99']:.2f}")
if "kernel" in rows and "rcp" in rows:
    print(f"rcp commit p99 / kernel's: {rows['rcp']['p99'] / rows['kernel']['p99']:.2f}")
PY
