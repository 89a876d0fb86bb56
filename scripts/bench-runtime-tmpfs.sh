#!/usr/bin/env bash
# Issue 11 benchmark, CPU-bound: 4 KiB random reads at QD32 through the runtime's API
# (examples/rt_randread.rs, real backend, CORES cores: 32 reader tasks dealt to them)
# against fio's io_uring engine (CORES jobs of QD 32/CORES) on the same 1 GiB file on
# tmpfs (memory: what is measured is the CPU cost per I/O), with O_DIRECT and buffered,
# alternating, ROUNDS rounds; prints medians and ratios.
# Goal: runtime IOPS >= 0.95 x fio's.
#
#   scripts/bench-runtime-tmpfs.sh           ROUNDS=5 SECS=3 CORES=1 (about 2 minutes)
#   The example is built in $CARGO_TARGET_DIR (default target); fio must be installed.
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
# A new directory of its own (under TMPFS_DIR, default /dev/shm), removed at the end.
mkdir -p "${TMPFS_DIR:-/dev/shm}"
DIR=$(mktemp -d "${TMPFS_DIR:-/dev/shm}/sluice-bench-runtime.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
if ! command -v fio >/dev/null; then
    echo "fio is not installed (e.g. apt-get install fio): nothing to compare with" >&2
    exit 2
fi
cargo build --release --quiet --example rt_randread
RT=${CARGO_TARGET_DIR:-target}/release/examples/rt_randread
dd if=/dev/urandom of="$DIR/data.1g" bs=1M count=1024 status=none
fio_iops() {
    fio --name=r --filename="$DIR/data.1g" --rw=randread --bs=4k --iodepth=$((32 / CORES)) \
        --numjobs="$CORES" --group_reporting \
        --ioengine=io_uring --direct="$1" --time_based --runtime="$SECS" --size=1g \
        --norandommap --randrepeat=0 --output-format=json 2>/dev/null |
        python3 -c "import json,sys; print(round(json.load(sys.stdin)['jobs'][0]['read']['iops']))"
}
rt_iops() {
    "$RT" --real "$DIR" --file data.1g --qd 32 --secs "$SECS" --cores "$CORES" $1 | sed -E 's/.*= ([0-9]+) IOPS.*/\1/'
}
declare -a rd fd rb fb
for r in $(seq 1 "$ROUNDS"); do
    rd+=("$(rt_iops "")"); fd+=("$(fio_iops 1)")
    rb+=("$(rt_iops --buffered)"); fb+=("$(fio_iops 0)")
    echo "   round $r: direct runtime ${rd[-1]} fio ${fd[-1]}; buffered runtime ${rb[-1]} fio ${fb[-1]}"
done
python3 - "${rd[*]}" "${fd[*]}" "${rb[*]}" "${fb[*]}" <<'PY'
import statistics, sys
m = statistics.median
rd, fd, rb, fb = ([float(x) for x in a.split()] for a in sys.argv[1:5])
for name, a, b in [("O_DIRECT", rd, fd), ("buffered", rb, fb)]:
    ratios = [x / y for x, y in zip(a, b)]
    print(f"{name}: median IOPS runtime {m(a):.0f}, fio {m(b):.0f}; median ratio {m(ratios):.3f} "
          f"({' '.join(f'{r:.3f}' for r in ratios)}); goal >= 0.95: {'pass' if m(ratios) >= 0.95 else 'FAIL'}")
PY
