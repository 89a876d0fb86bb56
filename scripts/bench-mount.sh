#!/usr/bin/env bash
# bench-mount.sh DIR [SECONDS]: `sluice mount` against the kernel on the same disk.
#
# In DIR (a directory on the disk to measure; it needs a few GiB free):
#  1. 4 KiB random reads, direct=1: psync at QD1 and io_uring at QD32, on the mount
#     (policy none) and on BACKING directly — IOPS and p50 (goal: mount >= 0.5x the
#     kernel's IOPS at QD32, QD1 p50 within +30 us);
#  2. a critical reader (ionice -c1, 4 KiB random reads, QD1) beside four bulk writers
#     (ionice -c3, 128 KiB sequential writes, direct=1): the reader's p99 on the mount
#     under none, rcp and ld, and on BACKING directly (the kernel's own scheduler).
# Needs root (or fusermount3), fio, python3 and a built `target/release/sluice`.
set -euo pipefail
DIR=${1:?usage: scripts/bench-mount.sh DIR [SECONDS]}
SECS=${2:-10}
cd "$(dirname "$0")/.."
SLUICE=$PWD/target/release/sluice
[ -x "$SLUICE" ] || { echo "build first: cargo build --release" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 2; }
B=$DIR/bench-backing M=$DIR/bench-mnt OUT=$DIR/bench-out
mkdir -p "$B" "$M" "$OUT"
pid=
cleanup() {
  if mountpoint -q "$M"; then fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M"; fi
  if [ -n "$pid" ]; then wait "$pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

mount_it() { # POLICY
  "$SLUICE" mount "$B" "$M" --policy "$1" -q --json "$OUT/mount-$1.json" >/dev/null &
  pid=$!
  for _ in $(seq 200); do mountpoint -q "$M" && return 0; sleep 0.05; done
  echo "the mount did not appear" >&2; exit 1
}
unmount_it() { fusermount3 -u "$M"; wait "$pid" || true; pid=; }

# The data file, laid out once on BACKING (1 GiB).
[ -f "$B/data" ] || fio --name=lay --filename="$B/data" --size=1g --rw=write --bs=1m \
  --direct=1 --output=/dev/null
# The bulk writers' files.
for i in 1 2 3 4; do
  [ -f "$B/bulk$i" ] || fio --name=lay --filename="$B/bulk$i" --size=256m --rw=write \
    --bs=1m --direct=1 --output=/dev/null
done

rr() { # WHERE ENGINE DEPTH NAME
  fio --name="$4" --filename="$1/data" --rw=randread --bs=4k --direct=1 \
    --ioengine="$2" --iodepth="$3" --time_based --runtime="$SECS" \
    --output-format=json --output="$OUT/$4.json"
}
mixed() { # WHERE NAME
  fio --output-format=json --output="$OUT/$2.json" \
    --name=critical --filename="$1/data" --rw=randread --bs=4k --direct=1 \
      --ioengine=psync --prioclass=1 --time_based --runtime="$SECS" \
    $(for i in 1 2 3 4; do echo "--name=bulk$i --filename=$1/bulk$i --rw=write --bs=128k \
      --direct=1 --ioengine=psync --prioclass=3 --time_based --runtime=$SECS"; done)
}

mount_it none
rr "$M" psync 1 mount-qd1; rr "$M" io_uring 32 mount-qd32
unmount_it
rr "$B" psync 1 kernel-qd1; rr "$B" io_uring 32 kernel-qd32
for p in none rcp ld; do mount_it "$p"; mixed "$M" "mixed-$p"; unmount_it; done
mixed "$B" mixed-kernel

python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
def job(name, j=0):
    d = json.load(open(os.path.join(out, name + ".json")))
    return d["jobs"][j]["read"]
def pct(r, p):
    return r["clat_ns"]["percentile"].get(p, 0) / 1000
print("4 KiB random reads, direct=1")
print(f"{'run':<14}{'IOPS':>10}{'p50 us':>10}{'p99 us':>10}")
for n in ["kernel-qd1", "mount-qd1", "kernel-qd32", "mount-qd32"]:
    r = job(n)
    print(f"{n:<14}{r['iops']:>10.0f}{pct(r,'50.000000'):>10.1f}{pct(r,'99.000000'):>10.1f}")
k1, m1, k32, m32 = (job(n) for n in ["kernel-qd1", "mount-qd1", "kernel-qd32", "mount-qd32"])
print(f"QD32 IOPS ratio mount/kernel: {m32['iops']/max(k32['iops'],1):.2f} (goal >= 0.5); "
      f"QD1 p50 difference: {pct(m1,'50.000000')-pct(k1,'50.000000'):+.1f} us (goal <= +30)")
print()
print("critical reader (ionice -c1) beside four bulk writers (ionice -c3)")
print(f"{'run':<14}{'crit IOPS':>10}{'p50 us':>10}{'p99 us':>10}{'bulk MiB/s':>12}")
for n in ["mixed-kernel", "mixed-none", "mixed-rcp", "mixed-ld"]:
    d = json.load(open(os.path.join(out, n + ".json")))
    c = d["jobs"][0]["read"]
    bulk = sum(j["write"]["bw"] for j in d["jobs"][1:]) / 1024
    print(f"{n:<14}{c['iops']:>10.0f}{pct(c,'50.000000'):>10.1f}{pct(c,'99.000000'):>10.1f}{bulk:>12.1f}")
PY
