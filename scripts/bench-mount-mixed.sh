#!/usr/bin/env bash
# bench-mount-mixed.sh BACKING MNT SECS ROUNDS [LABEL=SLUICE_BINARY[:EXTRA ARGS]]...
#
# Alternating rounds of the mixed job of bench-mount.sh: a critical reader (ionice -c1,
# fio psync, 4 KiB random reads, direct=1) beside four bulk writers (ionice -c3, 128 KiB
# sequential writes): on BACKING directly (the kernel), then for every LABEL=BINARY
# given, on the mount under `none` and `rcp`. Prints one line per run (with the load
# average) and, at the end, the medians per variant. BACKING must hold `data` (1 GiB)
# and bulk1..bulk4 (bench-mount.sh lays them out). Example:
#   scripts/bench-mount-mixed.sh /tmp/mbench/bench-backing /tmp/mnt 4 5 \
#     new=target/release/sluice nice10=target/release/sluice:--nice=-10
set -euo pipefail
B=${1:?usage: see the header} M=${2:?} S=${3:?} R=${4:?}
shift 4
OUT=$(mktemp -d)
pid=
trap 'mountpoint -q "$M" && fusermount3 -uz "$M"; [ -n "$pid" ] && wait "$pid" 2>/dev/null; rm -rf "$OUT"' EXIT
mixed() { # DIR TAG
  fio --output-format=json --output="$OUT/run.json" \
    --name=critical --filename="$1/data" --rw=randread --bs=4k --direct=1 \
      --ioengine=psync --prioclass=1 --time_based --runtime="$S" \
    $(for i in 1 2 3 4; do echo "--name=bulk$i --filename=$1/bulk$i --rw=write --bs=128k \
      --direct=1 --ioengine=psync --prioclass=3 --time_based --runtime=$S"; done)
  python3 - "$OUT/run.json" "$2" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY' | tee -a "$OUT/lines"
import json, sys
d = json.load(open(sys.argv[1])); c = d["jobs"][0]["read"]
b = sum(j["write"]["bw"] for j in d["jobs"][1:]) / 1024
# fio gives completion-latency percentiles (clat_ns) unless lat_percentiles=1.
p = c["lat_ns"].get("percentile") or c["clat_ns"]["percentile"]
print(f"{sys.argv[2]:<16} load {sys.argv[3]:>5} crit IOPS {c['iops']:6.0f} "
      f"p50 {p['50.000000']/1000:7.1f} p99 {p['99.000000']/1000:7.1f} us bulk {b:5.0f} MiB/s")
PY
}
for r in $(seq "$R"); do
  mixed "$B" kernel
  for v in "$@"; do
    label=${v%%=*} rest=${v#*=} bin=${rest%%:*} extra=
    [ "$rest" != "$bin" ] && extra=${rest#*:}
    for p in none rcp; do
      "$bin" mount "$B" "$M" --policy "$p" ${extra//,/ } -q >/dev/null 2>&1 &
      pid=$!
      for _ in $(seq 200); do mountpoint -q "$M" && break; sleep 0.05; done
      mixed "$M" "$label-$p"
      fusermount3 -u "$M"; wait "$pid" || true; pid=
    done
  done
done
python3 - "$OUT/lines" <<'PY'
import re, statistics as st, collections, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    m = re.match(r'(\S+)\s+load\s+(\S+) crit IOPS\s+(\d+) p50\s+(\S+) p99\s+(\S+) us bulk\s+(\d+)', l)
    if m:
        d[m[1]].append([float(m[i]) for i in (3, 4, 5, 6, 2)])
print("medians:")
for k, v in d.items():
    med = [st.median(x[i] for x in v) for i in range(5)]
    print(f"{k:<16} n={len(v)} IOPS {med[0]:7.0f} p50 {med[1]:7.1f} p99 {med[2]:7.1f} us "
          f"bulk {med[3]:6.0f} MiB/s load {med[4]:.2f}")
PY
