#!/usr/bin/env bash
# bench-mount.sh DIR [SECONDS]: `sluice mount` against the kernel on the same disk.
#
# In DIR (a directory on the disk to measure; it needs a few GiB free):
#  1. 4 KiB random reads, direct=1: psync at QD1 and io_uring at QD32, on the mount
#     (policy none) and on BACKING directly — IOPS and p50 (goal: mount >= 0.5x the
#     kernel's IOPS at QD32, QD1 p50 within +30 us);
#  2. a critical reader (ionice -c1, 4 KiB random reads, QD1) beside four bulk writers
#     (ionice -c3, 128 KiB sequential writes, direct=1): the reader's p99 on the mount
#     under none, rcp and ld, and on BACKING directly (the kernel's own scheduler);
#  3. buffered 4 KiB random reads and writes (psync QD1, direct=0) of a 128 MiB file:
#     on the mount through sluice's page cache (--cache 256m) against the kernel's own
#     page cache on BACKING directly, ROUNDS alternating rounds (default 3), medians
#     and the ratio mount/kernel; writes also as a critical writer (ionice -c1), whose
#     dirty limit is RCP's 20 % instead of 1 %; and the same jobs on the mount with
#     --cache 0 (each 4 KiB request direct to the backing file).
# PARTS (default "direct mixed buffered") picks the parts to run. TRANSPORTS (default
# "dev") lists the mount's transports the direct part measures (`dev`: /dev/fuse reads
# and writes; `uring`: FUSE over io_uring, which needs root and the kernel's switch on —
# `echo Y > /sys/module/fuse/parameters/enable_uring`; this script never flips it); the
# direct part runs ROUNDS alternating rounds (each transport, then the kernel) and
# prints medians.
# Needs root (or fusermount3), fio, python3 and a built `target/release/sluice` (or the
# binary given as SLUICE=PATH).
set -euo pipefail
DIR=${1:?usage: scripts/bench-mount.sh DIR [SECONDS]}
SECS=${2:-10}
PARTS=${PARTS:-direct mixed buffered}
ROUNDS=${ROUNDS:-3}
TRANSPORTS=${TRANSPORTS:-dev}
cd "$(dirname "$0")/.."
SLUICE=${SLUICE:-$PWD/target/release/sluice}
[ -x "$SLUICE" ] || { echo "build first: cargo build --release" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 2; }
if [[ " $PARTS " == *" direct "* && " $TRANSPORTS " == *" uring "* ]] &&
  [ "$(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null)" != Y ]; then
  echo "TRANSPORTS has uring but the kernel's FUSE over io_uring is off: as root," \
    "echo Y > /sys/module/fuse/parameters/enable_uring (Linux 6.14+), or drop uring" >&2
  exit 2
fi
B=$DIR/bench-backing M=$DIR/bench-mnt OUT=$DIR/bench-out
mkdir -p "$B" "$M" "$OUT"
pid=
cleanup() {
  if mountpoint -q "$M"; then fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M"; fi
  if [ -n "$pid" ]; then wait "$pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

mount_it() { # POLICY [ARGS...]
  local p=$1; shift
  "$SLUICE" mount "$B" "$M" --policy "$p" -q --json "$OUT/mount-$p.json" "$@" >/dev/null &
  pid=$!
  for _ in $(seq 200); do mountpoint -q "$M" && return 0; sleep 0.05; done
  echo "the mount did not appear" >&2; exit 1
}
unmount_it() { fusermount3 -u "$M"; wait "$pid" || true; pid=; }

# The data file, laid out once on BACKING (1 GiB), and the bulk writers' files.
[[ " $PARTS " != *" direct "* && " $PARTS " != *" mixed "* ]] || [ -f "$B/data" ] || fio --name=lay --filename="$B/data" --size=1g --rw=write --bs=1m \
  --direct=1 --output=/dev/null
for i in 1 2 3 4; do
  [[ " $PARTS " != *" mixed "* ]] || [ -f "$B/bulk$i" ] || fio --name=lay --filename="$B/bulk$i" --size=256m --rw=write \
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

buffered() { # WHERE RW NAME [PRIOCLASS]
  # invalidate=0: fio would drop the kernel's cached pages of the file first (the
  # mount's cache ignores that), and the point is a warm cache on both sides.
  fio --name="$3" --filename="$1/bdata" --rw="$2" --bs=4k --direct=0 --ioengine=psync \
    --invalidate=0 --time_based --runtime="$SECS" ${4:+--prioclass=$4} \
    --output-format=json --output="$OUT/$3.json"
}
warm() { # WHERE: read the file once (into the cache being measured)
  fio --name=warm --filename="$1/bdata" --rw=read --bs=1m --direct=0 --invalidate=0 \
    --output=/dev/null
}

if [[ " $PARTS " == *" direct "* ]]; then
  for r in $(seq "$ROUNDS"); do
    for t in $TRANSPORTS; do
      mount_it none --transport "$t"
      rr "$M" psync 1 "mount-$t-qd1-$r"; rr "$M" io_uring 32 "mount-$t-qd32-$r"
      unmount_it
    done
    rr "$B" psync 1 "kernel-qd1-$r"; rr "$B" io_uring 32 "kernel-qd32-$r"
  done
fi
if [[ " $PARTS " == *" mixed "* ]]; then
  for p in none rcp ld; do mount_it "$p"; mixed "$M" "mixed-$p"; unmount_it; done
  mixed "$B" mixed-kernel
fi
if [[ " $PARTS " == *" buffered "* ]]; then
  [ -f "$B/bdata" ] || fio --name=lay --filename="$B/bdata" --size=128m --rw=write \
    --bs=1m --direct=1 --output=/dev/null
  for r in $(seq "$ROUNDS"); do
    mount_it rcp --cache 256m
    warm "$M"
    buffered "$M" randread "buf-read-mount-$r"
    buffered "$M" randwrite "buf-write-mount-$r"
    buffered "$M" randwrite "buf-writec-mount-$r" 1
    unmount_it
    cp "$OUT/mount-rcp.json" "$OUT/buf-report-$r.json"
    mount_it rcp --cache 0
    buffered "$M" randread "buf-read-nocache-$r"
    buffered "$M" randwrite "buf-write-nocache-$r"
    unmount_it
    warm "$B"
    buffered "$B" randread "buf-read-kernel-$r"
    buffered "$B" randwrite "buf-write-kernel-$r"
    sync
  done
fi

python3 - "$OUT" "$PARTS" "$ROUNDS" "$TRANSPORTS" <<'PY'
import json, sys, os, statistics
out, parts, rounds = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
transports = sys.argv[4].split()
if "buffered" in parts:
    def one(name, rw):
        d = json.load(open(os.path.join(out, name + ".json")))["jobs"][0][rw]
        # fio gives completion-latency percentiles (clat_ns) unless lat_percentiles=1.
        p = d["lat_ns"].get("percentile") or d["clat_ns"].get("percentile", {})
        return d["iops"], p.get("50.000000", 0) / 1000, p.get("99.000000", 0) / 1000
    print(f"buffered 4 KiB random I/O, psync QD1, {rounds} alternating rounds, medians")
    print(f"{'run':<22}{'IOPS':>10}{'p50 us':>10}{'p99 us':>10}")
    med = {}
    for n, rw in [("buf-read-kernel", "read"), ("buf-read-mount", "read"),
                  ("buf-read-nocache", "read"),
                  ("buf-write-kernel", "write"), ("buf-write-mount", "write"),
                  ("buf-writec-mount", "write"), ("buf-write-nocache", "write")]:
        xs = [one(f"{n}-{r}", rw) for r in range(1, rounds + 1)]
        m = tuple(statistics.median(x[i] for x in xs) for i in range(3))
        med[n] = m
        print(f"{n:<22}{m[0]:>10.0f}{m[1]:>10.1f}{m[2]:>10.1f}   rounds: "
              + " ".join(f"{x[0]:.0f}" for x in xs))
    print(f"ratio mount/kernel IOPS: reads {med['buf-read-mount'][0]/max(med['buf-read-kernel'][0],1):.2f}, "
          f"writes {med['buf-write-mount'][0]/max(med['buf-write-kernel'][0],1):.2f} "
          f"(critical writer {med['buf-writec-mount'][0]/max(med['buf-write-kernel'][0],1):.2f}); "
          f"mount with/without its cache: reads {med['buf-read-mount'][0]/max(med['buf-read-nocache'][0],1):.2f}, "
          f"writes {med['buf-write-mount'][0]/max(med['buf-write-nocache'][0],1):.2f}")
    for r in range(1, rounds + 1):
        c = json.load(open(os.path.join(out, f"buf-report-{r}.json")))["runs"][0]["extra"]["runtime"]["cache"]
        print(f"round {r} cache: hits {c['hits']} misses {c['misses']} writebacks {c['writebacks']} "
              f"throttled {c['throttled']} peak dirty {c['peak_dirty']} pages")
def job(name, j=0):
    d = json.load(open(os.path.join(out, name + ".json")))
    return d["jobs"][j]["read"]
def pct(r, p):
    # fio gives completion-latency percentiles (clat_ns) unless lat_percentiles=1.
    d = r["lat_ns"].get("percentile") or r["clat_ns"].get("percentile", {})
    return d.get(p, 0) / 1000
if "direct" in parts:
    print(f"4 KiB random reads, direct=1, {rounds} alternating rounds, medians")
    print(f"{'run':<20}{'IOPS':>10}{'p50 us':>10}{'p99 us':>10}   rounds (IOPS)")
    def med(n):
        rs = [job(f"{n}-{r}") for r in range(1, rounds + 1)]
        m = lambda f: statistics.median(f(x) for x in rs)
        return (m(lambda x: x["iops"]), m(lambda x: pct(x, "50.000000")),
                m(lambda x: pct(x, "99.000000")), [x["iops"] for x in rs])
    res = {}
    for n in ["kernel-qd1"] + [f"mount-{t}-qd1" for t in transports] + \
             ["kernel-qd32"] + [f"mount-{t}-qd32" for t in transports]:
        res[n] = med(n)
        i, p50, p99, xs = res[n]
        print(f"{n:<20}{i:>10.0f}{p50:>10.1f}{p99:>10.1f}   " + " ".join(f"{x:.0f}" for x in xs))
    for t in transports:
        print(f"transport {t}: QD32 IOPS mount/kernel {res[f'mount-{t}-qd32'][0]/max(res['kernel-qd32'][0],1):.2f}; "
              f"QD1 p50 difference {res[f'mount-{t}-qd1'][1]-res['kernel-qd1'][1]:+.1f} us")
    print()
if "mixed" not in parts:
    sys.exit(0)
print("critical reader (ionice -c1) beside four bulk writers (ionice -c3)")
print(f"{'run':<14}{'crit IOPS':>10}{'p50 us':>10}{'p99 us':>10}{'bulk MiB/s':>12}")
for n in ["mixed-kernel", "mixed-none", "mixed-rcp", "mixed-ld"]:
    d = json.load(open(os.path.join(out, n + ".json")))
    c = d["jobs"][0]["read"]
    bulk = sum(j["write"]["bw"] for j in d["jobs"][1:]) / 1024
    print(f"{n:<14}{c['iops']:>10.0f}{pct(c,'50.000000'):>10.1f}{pct(c,'99.000000'):>10.1f}{bulk:>12.1f}")
PY
