#!/usr/bin/env bash
# Issue 14, real disk: RCP's OLTP stand-in (crates/sluice-apps/src/oltp.rs) on this
# machine's disk, real files in DIR through io_uring, one core, each round running
#   - Fig. 4's unlimited rate (experiments/rcp/fig4.toml): throughput, checkpoints, WAL;
#   - then Fig. 6's rate control (experiments/rcp/fig6.toml with rate_tps = RATE;
#     default: 45 % of none's median throughput in the Fig. 4 rounds, as the simulated
#     experiment's 6 000/s is of its device's): latency;
# under none, cfq-idle, rcp-block and rcp; prints each round and the medians per stack,
# and rcp's ratios against none. No pass/fail: see docs/real-device.md §6.
#
#   scripts/bench-oltp-real.sh [DIR]          DIR: default target/bench-oltp
#   ROUNDS=5 RATE=2000 scripts/bench-oltp-real.sh /work/bench
#   The example is built in $CARGO_TARGET_DIR (default target).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-auto}
T=${CARGO_TARGET_DIR:-target}
DIR=${1:-$PWD/target/bench-oltp}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
cargo build --release --quiet --example oltp
BIN=$T/release/examples/oltp
WORK=$(mktemp -d)
RUNS=$(mktemp -d "$DIR/oltp-bench.XXXXXX")
trap 'rm -rf "$WORK" "$RUNS"' EXIT
run_fig() { # fig config round
  echo "round $3/$ROUNDS, $1" >&2
  "$BIN" --config "$2" --real "$RUNS" | tee "$WORK/$1-$3.txt"
}
for r in $(seq "$ROUNDS"); do
  run_fig fig4 experiments/rcp/fig4.toml "$r"
done
if [ "$RATE" = auto ]; then
  RATE=$(cat "$WORK"/fig4-*.txt | awk '$1 == "none" {print $2}' | sort -g |
    awk '{a[NR] = $1} END {printf "%d", a[int((NR + 1) / 2)] * 0.45}')
  echo "rate: 45 % of none's median throughput = $RATE transactions/s" >&2
fi
sed "s/^rate_tps = .*/rate_tps = $RATE/" experiments/rcp/fig6.toml > "$WORK/fig6.toml"
for r in $(seq "$ROUNDS"); do
  run_fig fig6 "$WORK/fig6.toml" "$r"
done
python3 - "$WORK" "$ROUNDS" "$RATE" <<'PY'
import statistics, sys
work, rounds, rate = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def table(fig):
    rows = {}
    for r in range(1, rounds + 1):
        for line in open(f"{work}/{fig}-{r}.txt"):
            f = line.split()
            if len(f) == 9 and f[0] != "stack":
                rows.setdefault(f[0], []).append([float(x) for x in f[1:]])
    return {k: [statistics.median(c) for c in zip(*v)] for k, v in rows.items()}
t4, t6 = table("fig4"), table("fig6")
print(f"\nmedians over {rounds} rounds")
print("Fig. 4, unlimited rate: stack, txn/s, p99 ms, checkpoints, largest WAL MiB")
for k, m in t4.items():
    print(f"  {k:<10} {m[0]:>8.0f} {m[2]:>8.2f} {m[4]:>4.0f} {m[5]:>6.2f}")
print(f"Fig. 6, {rate} txn/s: stack, p50 ms, p99 ms, p99.9 ms")
for k, m in t6.items():
    print(f"  {k:<10} {m[1]:>8.2f} {m[2]:>8.2f} {m[3]:>8.2f}")
print(f"rcp against none: throughput {t4['rcp'][0] / t4['none'][0]:.2f} x (unlimited rate), "
      f"p99 {t6['rcp'][2] / t6['none'][2]:.2f} x (rate-controlled)")
PY
