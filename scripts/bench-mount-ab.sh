#!/usr/bin/env bash
# bench-mount-ab.sh DIR SECONDS ROUNDS NAME=BINARY... : the QD32 job of
# bench-mount.sh (4 KiB random reads, direct=1, fio's io_uring engine at iodepth 32, on
# DIR/bench-backing/data) on the mount of each BINARY over the FUSE-over-io_uring
# transport (`--transport uring`, policy none) and on BACKING directly (the kernel),
# in alternating rounds: each binary in turn, then the kernel. Prints each run's IOPS
# per round, the medians and each binary's ratio to the kernel's median.
# Needs root, fio, python3, the kernel's switch on
# (`echo Y > /sys/module/fuse/parameters/enable_uring`) and DIR/bench-backing/data
# (laid out by scripts/bench-mount.sh, or here when missing).
set -euo pipefail
DIR=${1:?usage: scripts/bench-mount-ab.sh DIR SECONDS ROUNDS NAME=BINARY...}
SECS=${2:?seconds per job}
ROUNDS=${3:?rounds}
shift 3
[ $# -ge 1 ] || { echo "give at least one NAME=BINARY" >&2; exit 2; }
[ "$(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null)" = Y ] || {
  echo "the kernel's FUSE over io_uring is off: echo Y > /sys/module/fuse/parameters/enable_uring" >&2
  exit 2
}
B=$DIR/bench-backing M=$DIR/bench-mnt OUT=$DIR/ab-out
mkdir -p "$B" "$M" "$OUT"
rm -f "$OUT"/*.json
pid=
cleanup() {
  if mountpoint -q "$M"; then fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M"; fi
  if [ -n "$pid" ]; then wait "$pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
[ -f "$B/data" ] || fio --name=lay --filename="$B/data" --size=1g --rw=write --bs=1m \
  --direct=1 --output=/dev/null
rr() { # WHERE NAME: the QD32 job of bench-mount.sh
  fio --name="$2" --filename="$1/data" --rw=randread --bs=4k --direct=1 \
    --ioengine=io_uring --iodepth=32 --time_based --runtime="$SECS" \
    --output-format=json --output="$OUT/$2.json"
}
names=()
for r in $(seq "$ROUNDS"); do
  for nb in "$@"; do
    n=${nb%%=*} bin=${nb#*=}
    [ "$r" = 1 ] && names+=("$n")
    "$bin" mount "$B" "$M" --policy none --transport uring -q >/dev/null &
    pid=$!
    for _ in $(seq 200); do mountpoint -q "$M" && break; sleep 0.05; done
    mountpoint -q "$M" || { echo "the mount of $n did not appear" >&2; exit 1; }
    rr "$M" "$n-$r"
    fusermount3 -u "$M"; wait "$pid" || true; pid=
  done
  rr "$B" "kernel-$r"
  echo "round $r done ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
done
python3 - "$OUT" "$ROUNDS" kernel "${names[@]}" <<'PY'
import json, os, statistics, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def iops(n):
    return json.load(open(os.path.join(out, n + ".json")))["jobs"][0]["read"]["iops"]
med = {}
print(f"{'run':<12}{'median IOPS':>12}  rounds (IOPS)")
for n in names:
    xs = [iops(f"{n}-{r}") for r in range(1, rounds + 1)]
    med[n] = statistics.median(xs)
    print(f"{n:<12}{med[n]:>12.0f}  " + " ".join(f"{x:.0f}" for x in xs))
for n in names[1:]:
    ratios = [iops(f"{n}-{r}") / iops(f"kernel-{r}") for r in range(1, rounds + 1)]
    print(f"{n}: median/kernel median {med[n]/med['kernel']:.2f}; "
          f"per-round ratios " + " ".join(f"{x:.2f}" for x in ratios)
          + f" (median {statistics.median(ratios):.2f})")
PY
