#!/usr/bin/env bash
# Parity benchmark: sluice's io_uring engine (policy `none`) against fio's io_uring
# engine on the same job files and the same 1 GiB file, one tool after the other,
# several rounds; prints the medians of the ratios sluice/fio.
#
#   scripts/bench-fio.sh [DIR]        DIR: where the 1 GiB test file goes (default: a
#                                     directory under the current one; must support O_DIRECT)
#   ROUNDS=5 RUNTIME=5 scripts/bench-fio.sh
#
# Cases: 4 KiB random read at QD1, at QD32, 4 jobs x QD32 (one shared file), and 4 KiB
# random write at QD32. Figures per run: IOPS (sum over jobs), mean latency, and CPU
# time (user+sys, from /usr/bin/time, whole process) per completed I/O.
# Latency: sluice's `lat` is reaped - submitted by the job thread; fio reports `clat`
# (from after its submit call to completion) and `lat` (from issue to completion),
# so both ratios are printed; `lat` spans the same interval as sluice's figure.
# Goals (issue 3): IOPS >= 0.95 x fio, QD1 mean latency <= 1.05 x fio, CPU/IO <= 1.1 x fio.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-5}
DIR=${1:-$PWD/target/bench-fio}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

if ! command -v fio >/dev/null; then
    echo "== installing fio"
    apt-get update -qq && apt-get install -y -qq fio >/dev/null
fi
if [ ! -x /usr/bin/time ]; then
    apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
if [ -z "${SLUICE:-}" ]; then
    cargo build --release --quiet
    SLUICE=${CARGO_TARGET_DIR:-target}/release/sluice
fi
FILE=$DIR/sluice-bench.1g
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [ ! -f "$FILE" ] || [ "$(stat -c %s "$FILE")" -lt $((1 << 30)) ]; then
    echo "== laying out $FILE (1 GiB)"
    fio --name=layout --filename="$FILE" --size=1g --rw=write --bs=1m --direct=1 \
        --ioengine=io_uring --iodepth=8 --output=/dev/null
fi

job() { # name rw iodepth numjobs
    cat >"$WORK/$1.fio" <<EOF
; parity case $1: written by scripts/bench-fio.sh, read by both fio and sluice
[global]
ioengine=io_uring
direct=1
filename=$FILE
size=1g
bs=4k
time_based
runtime=${RUNTIME}
norandommap
randrepeat=0

[$1]
rw=$2
iodepth=$3
numjobs=$4
EOF
}
job randread-qd1 randread 1 1
job randread-qd32 randread 32 1
job randread-4x32 randread 32 4
job randwrite-qd32 randwrite 32 1

# summary of one result: iops lat_mean_ns clat_mean_ns ios
fio_fig() {
    python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
iops = ios = lat = clat = n = 0.0
for j in d["jobs"]:
    for k in ("read", "write"):
        s = j[k]
        if s["total_ios"]:
            iops += s["iops"]; ios += s["total_ios"]
            lat += s["lat_ns"]["mean"] * s["total_ios"]; clat += s["clat_ns"]["mean"] * s["total_ios"]
            n += s["total_ios"]
print(iops, lat / max(n, 1), clat / max(n, 1), ios)
EOF
}
sluice_fig() {
    python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
iops = lat = n = 0.0
for j in d["jobs"]:
    for k in ("read", "write"):
        s = j[k]
        c = s["total_ios"]
        if c:
            iops += s["iops"]; lat += s["lat_ns"]["mean"] * c; n += c
print(iops, lat / max(n, 1), lat / max(n, 1), d["runs"][0]["extra"]["ios"])
EOF
}
cpu() { awk '{print $1 + $2}' "$1"; }

RES=$WORK/results.txt
: >"$RES"
for case in randread-qd1 randread-qd32 randread-4x32 randwrite-qd32; do
    for r in $(seq 1 "$ROUNDS"); do
        /usr/bin/time -f "%U %S" -o "$WORK/t.fio" \
            fio "$WORK/$case.fio" --output-format=json --output="$WORK/f.json" >/dev/null
        /usr/bin/time -f "%U %S" -o "$WORK/t.sl" \
            "$SLUICE" run "$WORK/$case.fio" -q --allow-write-existing \
            --json "$WORK/s.json" >/dev/null
        read -r fi fl fc fn < <(fio_fig "$WORK/f.json")
        read -r si sl _ sn < <(sluice_fig "$WORK/s.json")
        fcpu=$(cpu "$WORK/t.fio"); scpu=$(cpu "$WORK/t.sl")
        echo "$case $r $fi $fl $fc $fn $fcpu $si $sl $sn $scpu" | tee -a "$RES"
    done
done

python3 - "$RES" "$ROUNDS" "$RUNTIME" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
print()
print(f"medians over {sys.argv[2]} rounds of {sys.argv[3]} s (ratio = sluice / fio)")
print(f"{'case':<16}{'fio IOPS':>10}{'sluice IOPS':>12}{'IOPS':>7}{'lat/fio lat':>12}{'lat/fio clat':>13}"
      f"{'fio CPU/IO':>12}{'sl CPU/IO':>11}{'CPU/IO':>8}")
for case in dict.fromkeys(r[0] for r in rows):
    rs = [list(map(float, r[2:])) for r in rows if r[0] == case]
    med = lambda f: st.median(f(x) for x in rs)
    # x: fio iops, lat, clat, ios, cpu; sluice iops, lat, ios, cpu
    fi, si = med(lambda x: x[0]), med(lambda x: x[5])
    lat_lat = med(lambda x: x[6] / x[1]); lat_clat = med(lambda x: x[6] / x[2])
    fcpu = med(lambda x: x[4] / x[3] * 1e9); scpu = med(lambda x: x[8] / x[7] * 1e9)
    cpu_r = med(lambda x: (x[8] / x[7]) / (x[4] / x[3]))
    print(f"{case:<16}{fi:>10.0f}{si:>12.0f}{med(lambda x: x[5] / x[0]):>7.3f}{lat_lat:>12.3f}"
          f"{lat_clat:>13.3f}{fcpu:>10.0f}ns{scpu:>9.0f}ns{cpu_r:>8.3f}")
EOF

# CPU cost per I/O each policy adds over `none` (sluice only; 4 KiB random read, QD32,
# one worker so one policy instance sees the job): median of ROUNDS runs of
# (user+sys CPU of the process during the run) / I/Os, from the JSON's extra fields.
if [ "${POLICY_COST:-1}" = 1 ]; then
    policies=$("$SLUICE" list | sed -n '/^policies/,/^repro/p' | sed '1d;$d' | awk '{print $1}')
    echo
    echo "CPU per I/O by policy (randread-qd32, --workers 1, median of $ROUNDS rounds)"
    printf '%-14s%12s%12s%14s\n' policy IOPS 'CPU/IO' 'over none'
    base=""
    for p in $policies; do
        vals=()
        for r in $(seq 1 "$ROUNDS"); do
            "$SLUICE" run "$WORK/randread-qd32.fio" -q --allow-write-existing --workers 1 \
                --policy "$p" --json "$WORK/p.json" >/dev/null 2>"$WORK/p.err" || {
                echo "$p: $(tail -1 "$WORK/p.err")"; continue 2; }
            vals+=("$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); e=d['extra']; \
print(sum(j['read']['iops'] for j in d['jobs']), e['cpu_ns_per_io'])" "$WORK/p.json")")
        done
        read -r iops cpu < <(printf '%s\n' "${vals[@]}" | python3 -c "
import sys, statistics as st
rows = [list(map(float, l.split())) for l in sys.stdin]
print(st.median(r[0] for r in rows), st.median(r[1] for r in rows))")
        [ -z "$base" ] && base=$cpu
        printf '%-14s%12.0f%10.0fns%12.0fns\n' "$p" "$iops" "$cpu" "$(python3 -c "print($cpu - $base)")"
    done
fi
