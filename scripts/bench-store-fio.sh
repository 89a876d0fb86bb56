#!/usr/bin/env bash
# Issue 13: jobs/store-fsync.fio (4 KiB random write + fsync at QD1) on the journaled
# store against raw files — in the simulator (`sluice sim`, seeds 1..ROUNDS) and on
# this machine's disk (`sluice run` in DIR: the raw job's file on DIR's file system,
# write + fdatasync through io_uring; the store in a new file of DIR), rounds
# alternating; prints each run's sync and write latency and the medians, and the
# ratios against raw files.
#
#   scripts/bench-store-fio.sh [DIR]         DIR: default target/bench-store-fio
#   ROUNDS=3 MODES="compound fjournal" scripts/bench-store-fio.sh /work/bench
#   The binary is built in $CARGO_TARGET_DIR (default target).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
MODES=${MODES:-"compound fjournal"}
T=${CARGO_TARGET_DIR:-target}
DIR=${1:-$PWD/target/bench-store-fio}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
cargo build --release --quiet
SLUICE=$T/release/sluice
JOB=jobs/store-fsync.fio
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# One run's figures from its JSON: sync p50, p99, mean; write p50 (µs).
figures() {
    python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
s, w = j["sync"]["lat_ns"], j["write"]["lat_ns"]
p = lambda d, k: d["percentile"][k] / 1e3
print(f'{p(s, "50.000000"):.2f} {p(s, "99.000000"):.2f} {s["mean"] / 1e3:.2f} {p(w, "50.000000"):.2f}')
PY
}

run_one() { # world fs round
    local world=$1 fs=$2 r=$3 out="$WORK/$1-$2-$3.json" args=()
    [ "$fs" != raw ] && args=(--fs "$fs")
    if [ "$world" = sim ]; then
        "$SLUICE" sim "$JOB" -q --seed "$r" "${args[@]}" --json "$out" >/dev/null
    else
        "$SLUICE" run "$JOB" -q -D "$DIR" "${args[@]}" --json "$out" >/dev/null
    fi
    echo "$world $fs $(figures "$out")" | tee -a "$WORK/all"
}

echo "world fs sync_p50_us sync_p99_us sync_mean_us write_p50_us"
for r in $(seq 1 "$ROUNDS"); do
    for world in sim real; do
        for fs in raw $MODES; do
            run_one "$world" "$fs" "$r"
        done
    done
done
echo "== medians over $ROUNDS rounds (ratio: against raw files in the same world)"
python3 - "$WORK/all" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    w, fs, *v = line.split()
    rows.setdefault((w, fs), []).append([float(x) for x in v])
med = {k: [statistics.median(c) for c in zip(*v)] for k, v in rows.items()}
print("world fs sync_p50_us sync_p99_us sync_mean_us write_p50_us  sync_p50/raw sync_p99/raw")
for (w, fs), m in med.items():
    raw = med[(w, "raw")]
    print(f"{w} {fs} {m[0]:.2f} {m[1]:.2f} {m[2]:.2f} {m[3]:.2f}  {m[0] / raw[0]:.2f} {m[1] / raw[1]:.2f}")
PY
