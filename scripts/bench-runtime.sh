#!/usr/bin/env bash
# Issue 11 benchmark: 4 KiB random reads at QD32 issued through the runtime's API
# (examples/rt_randread.rs, real backend, CORES cores: 32 reader tasks dealt to them)
# against `sluice run` on the same total depth (CORES jobs of QD 32/CORES, --workers
# CORES) and the same 1 GiB file, alternating, ROUNDS rounds; prints the medians and the
# ratio. Goal: runtime IOPS >= 0.95 x sluice run's.
#
#   scripts/bench-runtime.sh [DIR]      DIR: where the 1 GiB file is (default target/bench-runtime;
#                                       O_DIRECT needed)
#   ROUNDS=5 SECS=3 CORES=1 scripts/bench-runtime.sh     (CORES: 1, 2, 4, 8, 16 or 32)
#   The binaries are built in $CARGO_TARGET_DIR (default target).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-3}
CORES=${CORES:-1}
case "$CORES" in
1 | 2 | 4 | 8 | 16 | 32) ;;
*)
    echo "CORES=$CORES: give 1, 2, 4, 8, 16 or 32 (a divisor of the depth 32)" >&2
    exit 2
    ;;
esac
T=${CARGO_TARGET_DIR:-target}
DIR=${1:-$PWD/target/bench-runtime}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
cargo build --release --quiet --example rt_randread
cargo build --release --quiet
RT=$T/release/examples/rt_randread
SLUICE=$T/release/sluice
FILE=sluice-bench.1g
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ ! -f "$DIR/$FILE" ] || [ "$(stat -c %s "$DIR/$FILE")" -lt $((1 << 30)) ]; then
    echo "== laying out $DIR/$FILE (1 GiB)"
    dd if=/dev/urandom of="$DIR/$FILE" bs=1M count=1024 oflag=direct status=none
fi
cat >"$WORK/rr.fio" <<JOB
[r]
rw=randread
bs=4k
iodepth=$((32 / CORES))
numjobs=$CORES
size=1g
time_based
runtime=${SECS}s
filename=$FILE
JOB
rt=()
sr=()
for r in $(seq 1 "$ROUNDS"); do
    a=$("$RT" --real "$DIR" --file "$FILE" --qd 32 --secs "$SECS" --cores "$CORES" | sed -E 's/.*= ([0-9]+) IOPS.*/\1/')
    "$SLUICE" run "$WORK/rr.fio" -D "$DIR" --allow-write-existing --workers "$CORES" -q --json "$WORK/r.json" >/dev/null
    b=$(python3 -c "import json,sys; d=json.load(open('$WORK/r.json')); print(round(d['jobs'][0]['read']['iops']))")
    rt+=("$a"); sr+=("$b")
    echo "   round $r: runtime $a IOPS, sluice run $b IOPS"
done
python3 - "${rt[*]}" "${sr[*]}" <<'PY'
import statistics, sys
rt = [float(x) for x in sys.argv[1].split()]
sr = [float(x) for x in sys.argv[2].split()]
ratios = [a / b for a, b in zip(rt, sr)]
m = statistics.median
print(f"median IOPS: runtime {m(rt):.0f}, sluice run {m(sr):.0f}; median of per-round ratios {m(ratios):.3f} "
      f"({' '.join(f'{r:.3f}' for r in ratios)}); goal >= 0.95: {'pass' if m(ratios) >= 0.95 else 'FAIL'}")
PY
