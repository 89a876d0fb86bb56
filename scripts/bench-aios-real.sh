#!/usr/bin/env bash
# Issue 14, real disk: AIOS's fsync path (ATC '19 Fig. 11) on this machine's disk —
# 1 to N critical threads, each a buffered 4 KiB write at a random block of its own
# file on the journaled store (a store file in DIR) and an fsync; the synchronous
# commit path against AIOS's asynchronous one, alternating in each round; ROUNDS
# rounds; prints each round and the medians of the mean latency per path and thread
# count, and the gain. One core (the real page cache and store run on one).
# No pass/fail: see docs/real-device.md.
#
#   scripts/bench-aios-real.sh [DIR]          DIR: default target/bench-aios
#   ROUNDS=5 OPS=300 THREADS=1,2,4,8 scripts/bench-aios-real.sh /work/bench
#   The example is built in $CARGO_TARGET_DIR (default target).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
OPS=${OPS:-200}
THREADS=${THREADS:-1,2,4,8}
T=${CARGO_TARGET_DIR:-target}
DIR=${1:-$PWD/target/bench-aios}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
cargo build --release --quiet --example write_fsync
BIN=$T/release/examples/write_fsync
WORK=$(mktemp -d)
RUNS=$(mktemp -d "$DIR/aios-bench.XXXXXX")
trap 'rm -rf "$WORK" "$RUNS"' EXIT
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  "$BIN" --threads "$THREADS" --ops "$OPS" --real "$RUNS" | tee "$WORK/round$r.txt"
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for r in range(1, rounds + 1):
    for line in open(f"{work}/round{r}.txt"):
        f = line.split()
        if len(f) == 6 and f[0].isdigit():
            rows.setdefault(int(f[0]), []).append((float(f[1]), float(f[2])))
print(f"\nmedians over {rounds} rounds: threads, sync µs, async µs, gain (1 - async / sync)")
for t, runs in sorted(rows.items()):
    s = statistics.median(x[0] for x in runs)
    a = statistics.median(x[1] for x in runs)
    print(f"{t:>7} {s:>10.1f} {a:>10.1f} {(1 - a / s) * 100:>7.1f} %")
PY
