#!/usr/bin/env bash
# Issue 11 benchmark: sluice's runtime against glommio's DmaFile on 4 KiB random reads at
# QD32 (QD tasks, one read each at a time, one core), on this machine's disk and on tmpfs,
# alternating, ROUNDS rounds; prints the medians. glommio is a benchmark-only
# dependency: bench/glommio-randread is its own crate, outside the workspace and CI.
#
#   scripts/bench-glommio.sh [DISK_DIR]     ROUNDS=3 SECS=3
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-3}
DISK=${1:-$PWD/target/bench-runtime}
# A new directory of its own (under TMPFS_DIR, default /dev/shm), removed at the end.
mkdir -p "${TMPFS_DIR:-/dev/shm}"
TMP=$(mktemp -d "${TMPFS_DIR:-/dev/shm}/sluice-bench-glommio.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cargo build --release --quiet --example rt_randread
(cd bench/glommio-randread && cargo build --release --quiet)
RT=target/release/examples/rt_randread
GL=bench/glommio-randread/target/release/glommio-randread
mkdir -p "$DISK"
[ -f "$DISK/sluice-bench.1g" ] || dd if=/dev/urandom of="$DISK/sluice-bench.1g" bs=1M count=1024 oflag=direct status=none
dd if=/dev/urandom of="$TMP/sluice-bench.1g" bs=1M count=1024 status=none
declare -a rd gd rt gt
for r in $(seq 1 "$ROUNDS"); do
    rd+=("$("$RT" --real "$DISK" --file sluice-bench.1g --secs "$SECS" | sed -E 's/.*= ([0-9]+) IOPS.*/\1/')")
    gd+=("$("$GL" "$DISK/sluice-bench.1g" 32 "$SECS" | sed -E 's/.*= ([0-9]+) IOPS.*/\1/')")
    rt+=("$("$RT" --real "$TMP" --file sluice-bench.1g --secs "$SECS" | sed -E 's/.*= ([0-9]+) IOPS.*/\1/')")
    gt+=("$("$GL" "$TMP/sluice-bench.1g" 32 "$SECS" | sed -E 's/.*= ([0-9]+) IOPS.*/\1/')")
    echo "   round $r: disk runtime ${rd[-1]} glommio ${gd[-1]}; tmpfs runtime ${rt[-1]} glommio ${gt[-1]}"
done
python3 - "${rd[*]}" "${gd[*]}" "${rt[*]}" "${gt[*]}" <<'PY'
import statistics, sys
m = statistics.median
rd, gd, rt, gt = ([float(x) for x in a.split()] for a in sys.argv[1:5])
for name, a, b in [("disk", rd, gd), ("tmpfs", rt, gt)]:
    print(f"{name}: median IOPS sluice runtime {m(a):.0f}, glommio DmaFile {m(b):.0f}, ratio {m(a)/m(b):.2f}")
PY
