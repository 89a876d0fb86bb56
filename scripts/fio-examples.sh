#!/usr/bin/env bash
# Which of fio's own example job files run under `sluice sim` and `sluice run`, and why
# the others do not (issue 15). Prints one line per example and the counts; the table in
# docs/workloads.md ("fio's own examples") is this script's output.
#
#   scripts/fio-examples.sh EXAMPLES_DIR [RUN_DIR]
#
#   EXAMPLES_DIR  fio's examples/ directory (e.g. from a clone of fio's repository).
#   RUN_DIR       where `sluice run` creates its files (default: a new temporary
#                 directory, removed at the end). It must support O_DIRECT.
#
#   SIM_SECS=20 RUN_SECS=30   how long one example may run in each world; an example
#                             still running then is stopped with Ctrl-C (SIGINT), and
#                             counts as running when it had started its I/O.
#   SLUICE=path/to/sluice     the binary (default: target/release/sluice, built here).
#
# Under `sluice sim` an example with zonemode=zbd runs on the zoned profile `zns`, one
# with fill_device on `nand` (a profile with a capacity), one with fdp=1 on `nand` (a
# profile with NVMe Flexible Data Placement); the others on the default. An example
# whose header comment says how to run it with `--section=NAME` (fio's xnvme examples)
# is run with that section in both worlds.
# Under `sluice run` a fill_device example writes until its file system is full, so it
# runs only in FILL_DIR (e.g. a small tmpfs: mount -t tmpfs -o size=16m tmpfs DIR).
#
# Safety: `sluice run` works only on files it creates in RUN_DIR. Examples that name an
# absolute path outside /dev (filename=/data/x, directory=/mnt/ssd) are not run there;
# those naming a device are run, and sluice refuses them (no --allow-device is given).
set -euo pipefail
cd "$(dirname "$0")/.."
EXAMPLES=${1:?usage: scripts/fio-examples.sh EXAMPLES_DIR [RUN_DIR]}
EXAMPLES=$(cd "$EXAMPLES" && pwd)
SIM_SECS=${SIM_SECS:-20}
RUN_SECS=${RUN_SECS:-30}
if [ -z "${SLUICE:-}" ]; then
    cargo build --release --quiet
    SLUICE=$PWD/target/release/sluice
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -n "${2:-}" ]; then
    RUN_DIR=$(cd "$2" && pwd)
else
    RUN_DIR=$WORK/files
    mkdir -p "$RUN_DIR"
fi
# Jobs run with their log files (write_bw_log=…) in a scratch directory.
mkdir -p "$WORK/cwd"

# The reason an example stopped: sluice's error line without the file name.
reason() {
    grep -m1 'sluice: error: ' "$1" | sed -e 's/^sluice: error: //' -e 's|^[^ ]*\.fio:[0-9]*: ||' -e 's/\. .*//' | cut -c1-220
}

# Run one world: prints "ok", "ok (stopped at N s)", or "no: REASON".
try() {
    local world=$1 file=$2 secs=$3 rc
    shift 3
    set +e
    (cd "$WORK/cwd" && timeout --preserve-status -s INT "$secs" "$SLUICE" "$world" "$file" "$@" \
        --quiet >"$WORK/out" 2>"$WORK/err")
    rc=$?
    set -e
    if [ $rc = 0 ]; then
        echo "ok"
    elif [ $rc = 130 ] && grep -q '^Jobs' "$WORK/out"; then
        echo "ok (stopped at ${secs} s)"
    elif [ $rc = 130 ]; then
        echo "no: stopped at ${secs} s before its I/O began (laying out its files)"
    elif grep -q 'sluice: error: ' "$WORK/err"; then
        echo "no: $(reason "$WORK/err")"
    else
        echo "no: exit status $rc: $(head -c 160 "$WORK/err" | tr '\n' ' ')"
    fi
}

sim_ok=0
run_ok=0
total=0
for f in "$EXAMPLES"/*.fio; do
    name=$(basename "$f")
    total=$((total + 1))
    # The simulated device an example needs: a zoned one for zonemode=zbd, one with a
    # capacity (the default ull has none) for fill_device.
    dev=()
    fill=
    if grep -qE '^\s*zonemode\s*=\s*zbd' "$f"; then
        dev=(--device zns)
    elif grep -qE '^\s*fill_(device|fs)\s*=\s*(1|true)' "$f"; then
        dev=(--device nand)
        fill=1
    elif grep -qE '^\s*(fdp\s*=\s*(1|true)|data_?placement\s*=\s*fdp)' "$f"; then
        dev=(--device nand)
    fi
    # fio's `--section` as the example's own comment gives it (`;   --section=default`).
    sec=()
    s=$(grep -m1 -oE '^;\s*--section=[A-Za-z0-9_-]+' "$f" | sed 's/.*=//' || true)
    [ -n "$s" ] && sec=(--section "$s")
    sim=$(try sim "$f" "$SIM_SECS" "${dev[@]}" "${sec[@]}")
    # Absolute paths outside /dev would put files outside RUN_DIR: not run.
    outside=$(grep -hE '^\s*(filename|directory|filename_format)\s*=\s*/' "$f" |
        sed -E 's/^\s*[a-z_]+\s*=\s*//' | grep -v '^/dev/' | head -1 || true)
    if [ -n "$outside" ]; then
        run="not run: names $outside, outside the test directory"
    elif [ -n "$fill" ] && [ -z "${FILL_DIR:-}" ]; then
        # fill_device writes until its file system is full: only on one made for it.
        run="not run: fill_device would fill RUN_DIR's file system; give FILL_DIR=a small file system to run it"
    elif [ -n "$fill" ]; then
        run=$(try run "$f" "$RUN_SECS" --directory "$FILL_DIR" "${sec[@]}")
    else
        run=$(try run "$f" "$RUN_SECS" --directory "$RUN_DIR" "${sec[@]}")
    fi
    [[ $sim == ok* ]] && sim_ok=$((sim_ok + 1))
    [[ $run == ok* ]] && run_ok=$((run_ok + 1))
    echo "| \`$name\` | $sim | $run |"
done
echo
echo "fio examples: $total; run under sluice sim: $sim_ok; under sluice run: $run_ok"
