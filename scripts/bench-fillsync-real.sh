#!/usr/bin/env bash
# Issue 14, real disk: FastResponse's fillsync (a critical task's 4 KiB append +
# fsync, at a fixed arrival rate) beside the Bayes co-runner of Table 1 (128 KiB reads
# and buffered writes, an fsync every 8 writes), on this machine's disk: the journaled
# store in one file of DIR under the Fig. 13 schemes (vanilla = compound, BSJ-Opt =
# ld + critical wakeup + fjournal, and the two between) against the same program on
# host files in DIR (write + fdatasync(2): the host file system, ext4 here).
# One core, puts every INTERVAL_US (default 20 000 µs: a put is not queued behind the
# previous one on this disk, whose syncs take ~0.25 to ~4 ms); ROUNDS rounds; prints
# each round and the medians of the put mean, p99 and p99.9 per scheme, and each
# scheme's ratio against host files. No pass/fail: see docs/real-device.md.
#
#   scripts/bench-fillsync-real.sh [DIR]      DIR: default target/bench-fillsync
#   ROUNDS=5 PUTS=300 INTERVAL_US=10000 scripts/bench-fillsync-real.sh /work/bench
#   The example is built in $CARGO_TARGET_DIR (default target).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
PUTS=${PUTS:-200}
INTERVAL_US=${INTERVAL_US:-20000}
T=${CARGO_TARGET_DIR:-target}
DIR=${1:-$PWD/target/bench-fillsync}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
cargo build --release --quiet --example fillsync
BIN=$T/release/examples/fillsync
WORK=$(mktemp -d)
RUNS=$(mktemp -d "$DIR/fillsync-bench.XXXXXX")
trap 'rm -rf "$WORK" "$RUNS"' EXIT
cat > "$WORK/job.toml" <<TOML
puts = $PUTS
interval_us = $INTERVAL_US
record_bytes = 4096
corunner_tasks = 2
fsync_every = 8
cpu_us = 100
cores = 1
warmup_ms = 20

[[corunner]]
name = "bayes"
read_ms = 1.11
write_ms = 1.47
TOML
for r in $(seq "$ROUNDS"); do
  mkdir -p "$RUNS/$r"
  echo "round $r/$ROUNDS" >&2
  "$BIN" --config "$WORK/job.toml" --real "$RUNS/$r" | tee "$WORK/round$r.txt"
  rm -rf "${RUNS:?}/$r"
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for r in range(1, rounds + 1):
    for line in open(f"{work}/round{r}.txt"):
        f = line.split()
        if len(f) >= 5 and f[0] == "bayes":
            rows.setdefault(f[1], []).append([float(x) for x in f[2:5]])
print(f"\nmedians over {rounds} rounds (µs): scheme, put mean, p99, p99.9, and against host files")
host = [statistics.median(c) for c in zip(*rows["host"])]
for name, runs in rows.items():
    m = [statistics.median(c) for c in zip(*runs)]
    ratio = " / ".join(f"{a / b:.2f}" for a, b in zip(m, host))
    print(f"{name:<8} {m[0]:>10.1f} {m[1]:>10.1f} {m[2]:>10.1f}   × host: {ratio}")
PY
