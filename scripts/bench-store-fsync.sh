#!/usr/bin/env bash
# Issue 13, real disk: the journaled store's fsync against the host kernel's path
# (the same program as threads doing pwrite + fsync on ext4 files in DIR), in many
# short rounds. Each round runs `examples/store_fsync` once with `--kernel`: 400
# fsynced 4 KiB appends per setting, the store's settings and the kernel's path back
# to back in one process after a discarded warm-up setting (`compound+rcp`: the first
# store run of a process meets the disk still taking the store image's preallocation);
# odd rounds run the kernel's path first, even rounds last (`--kernel-first`), so
# neither side always meets the disk after the other.
# Prints, per store setting, the median over rounds of its p50 and p99 ratios to the
# kernel's in the same round, a 90 % bootstrap interval of each median (resampling
# rounds, 10 000 draws, fixed seed), and in how many rounds the ratio was at or below
# the goal. A disk whose rounds move by tens of % is what the interval shows. Beside
# the bulk writers it also prints what they wrote per second while the log ran, as the
# ratio of the store's to the kernel's: the price of the critical writer's latency.
#
#   scripts/bench-store-fsync.sh [DIR]            DIR: default target/bench-store-fsync
#   ROUNDS=30 MODE=alone  GOAL=1.0 scripts/bench-store-fsync.sh /work/bench   # QD1 alone
#   ROUNDS=15 MODE=beside GOAL=0.5 scripts/bench-store-fsync.sh /work/bench   # beside bulk writers
#   SETTINGS="fjournal+async compound+async" RECORD=512 ...                   # other settings, WAL records
#   RECORDS=2000 ...               # fsyncs per setting and round (default 400: a p99 of 4 samples)
#   POLICIES="rcp ld" ...          # block-layer policies (default rcp): one process per policy
#                                  # and round, in alternating order, each against its own
#                                  # kernel run
#   The example is built in $CARGO_TARGET_DIR (default target). MODE=beside adds
#   RCP's class-aware limits in the store (--class-limits), as docs/perf.md's runs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-20}
MODE=${MODE:-alone}
GOAL=${GOAL:-1.0}
RECORD=${RECORD:-4096}
RECORDS=${RECORDS:-400}
SETTINGS=${SETTINGS:-fjournal+async}
POLICIES=${POLICIES:-rcp}
T=${CARGO_TARGET_DIR:-target}
DIR=${1:-$PWD/target/bench-store-fsync}
case "$MODE" in
  alone) MODE_ARGS=(--alone) ;;
  beside) MODE_ARGS=(--class-limits) ;;
  *) echo "bench-store-fsync: MODE=$MODE: give alone or beside" >&2; exit 2 ;;
esac
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
cargo build --release --quiet --example store_fsync
BIN=$T/release/examples/store_fsync
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
FS_ARGS=(--fs compound+rcp)
for s in $SETTINGS; do FS_ARGS+=(--fs "$s"); done
read -r -a POLS <<< "$POLICIES"
for r in $(seq "$ROUNDS"); do
  first=()
  if (( r % 2 == 1 )); then first=(--kernel-first); fi
  echo "round $r/$ROUNDS${first:+ (kernel first)}" >&2
  order=("${POLS[@]}")
  if (( (r / 2) % 2 == 1 )); then order=(); for ((i = ${#POLS[@]} - 1; i >= 0; i--)); do order+=("${POLS[i]}"); done; fi
  for pol in "${order[@]}"; do
    "$BIN" --real "$DIR" --kernel "${first[@]}" "${MODE_ARGS[@]}" --policy "$pol" --record "$RECORD" --records "$RECORDS" \
      "${FS_ARGS[@]}" > "$WORK/round$r.$pol.txt"
  done
done
python3 - "$WORK" "$ROUNDS" "$GOAL" "$MODE" "$RECORD" "$SETTINGS" "$POLICIES" <<'PY'
import random, statistics, sys
work, rounds, goal, mode, record = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
settings, policies = sys.argv[6].split(), sys.argv[7].split()
def parse(path):  # setting -> (p50, p99, bulk writers' MB/s or None)
    d = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 10 and f[1] == "fsync" and f[2] == "mean":
            bulk = float(f[12]) if len(f) >= 13 and f[11] == "bulk" else None
            d[f[0]] = (float(f[6]), float(f[9]), bulk)
    return d
per = {p: [parse(f"{work}/round{r}.{p}.txt") for r in range(1, rounds + 1)] for p in policies}
rng = random.Random(1)
def interval(xs):
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(10000))
    return meds[500], meds[9499]
kern = [d["kernel"] for p in policies for d in per[p]]
print(f"{rounds} rounds, {record} B records, {mode}; kernel p50 / p99 medians "
      f"{statistics.median(k[0] for k in kern):.0f} / {statistics.median(k[1] for k in kern):.0f} µs")
label = (lambda p, s: f"{p} {s}") if len(policies) > 1 else (lambda p, s: s)
width = max(len(label(p, s)) for p in policies for s in settings) + 1
beside = all(d["kernel"][2] for p in policies for d in per[p])
if beside:
    print(f"kernel's bulk writers: median {statistics.median(k[2] for k in kern):.0f} MB/s while the log ran")
print(f"{'setting':<{width}} {'p50 ratio':>10} {'90 % interval':>16} {'≤ goal':>8} {'p99 ratio':>10} {'90 % interval':>16} {'≤ goal':>8}"
      + (f" {'bulk ratio':>11} {'90 % interval':>16}" if beside else ""))
for p in policies:
    for s in [k for k in per[p][0] if k in settings]:
        cells = []
        for i in (0, 1):
            xs = [d[s][i] / d["kernel"][i] for d in per[p]]
            lo, hi = interval(xs)
            met = sum(x <= goal for x in xs)
            cells.append(f"{statistics.median(xs):>9.2f}× {f'{lo:.2f}–{hi:.2f}×':>16} {met:>5}/{rounds}")
        if beside:
            xs = [d[s][2] / d["kernel"][2] for d in per[p]]
            lo, hi = interval(xs)
            cells.append(f"{statistics.median(xs):>10.2f}× {f'{lo:.2f}–{hi:.2f}×':>16}")
        print(f"{label(p, s):<{width}} " + " ".join(cells))
print(f"(goal: ratio ≤ {goal}; a ratio is the store's figure over the kernel's in the same process and round"
      + ("; bulk ratio: the bulk writers' MB/s while the log ran, the store's over the kernel's, no goal" if beside else "") + ")")
PY
