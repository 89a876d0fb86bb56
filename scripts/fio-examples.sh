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
#                             counts as running when it had started its I/O. Under
#                             `sluice run` the time sluice spends laying out the job's
#                             files (between its "laying out" and "laid out" lines) is
#                             not counted, as fio counts its layout outside runtime.
#   LAYOUT_SECS=900           how long `sluice run` may lay out one example's files.
#   STOP_SECS=120             how long an example may take to stop after the Ctrl-C
#                             before it is killed (and its row says so).
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
# Safety: `sluice run` works only on files it creates in RUN_DIR. An example naming an
# absolute path (filename=/data/x, directory=/mnt/ssd, filename_format=/a/b.$jobnum) or
# a device (/dev/sda, /dev/nvme0n1, /dev/XXX; not /dev/null, /dev/zero) runs on a copy
# of its job file with each such path mapped into a new directory of RUN_DIR
# (/tmp/testfile -> RUN_DIR/paths.XXXX/tmp/testfile), removed at the end; its row says
# so. When a path is mapped and the job gives no size (size=, filesize=, io_size=,
# io_limit=), the copy starts with a [global] size=1g, as scripts/fio-agree.py's copies
# do (fio, and sluice as fio, refuse a new file without a size), and the row says so. Examples with zonemode=zbd keep their devices: a zoned device is
# what they need, and sluice refuses them (no --allow-device is given). An example
# whose files do not fit the free space is not run (sluice checks before it writes).
set -euo pipefail
cd "$(dirname "$0")/.."
EXAMPLES=${1:?usage: scripts/fio-examples.sh EXAMPLES_DIR [RUN_DIR]}
EXAMPLES=$(cd "$EXAMPLES" && pwd)
SIM_SECS=${SIM_SECS:-20}
RUN_SECS=${RUN_SECS:-30}
LAYOUT_SECS=${LAYOUT_SECS:-900}
STOP_SECS=${STOP_SECS:-120}
if [ -z "${SLUICE:-}" ]; then
    cargo build --release --quiet
    SLUICE=$PWD/target/release/sluice
fi
WORK=$(mktemp -d)
MAP_DIR=
trap 'rm -rf "$WORK"; [ -z "$MAP_DIR" ] || rm -rf "$MAP_DIR"' EXIT
if [ -n "${2:-}" ]; then
    RUN_DIR=$(cd "$2" && pwd)
else
    RUN_DIR=$WORK/files
    mkdir -p "$RUN_DIR"
fi
# Where the examples' absolute paths are mapped (inside RUN_DIR, made here).
MAP_DIR=$(mktemp -d "$RUN_DIR/paths.XXXXXX")
# Jobs run with their log files (write_bw_log=…) in a scratch directory.
mkdir -p "$WORK/cwd" "$WORK/jobs"

# The reason an example stopped: sluice's error line without the file name, the
# temporary directories named as such.
reason() {
    grep -m1 'sluice: error: ' "$1" | sed -e 's/^sluice: error: //' -e 's|^[^ ]*\.fio:[0-9]*: ||' \
        -e "s|$MAP_DIR|<test dir>|g" -e "s|$RUN_DIR|<test dir>|g" -e 's/\. .*//' | cut -c1-220
}

# Whether a path is one to map: absolute and outside RUN_DIR, or a device, but not
# /dev/null, /dev/zero (no file behind them) nor /dev/shm (a memory file system).
mappable() {
    case $1 in
    /dev/null | /dev/zero | /dev/shm/*) return 1 ;;
    "$RUN_DIR"/*) return 1 ;;
    /*) return 0 ;;
    *) return 1 ;;
    esac
}

# Copy job file $1 to $2 with every absolute filename=/directory=/filename_format path
# (each of a `:` list) mapped into MAP_DIR; prints the paths mapped, one a line.
map_paths() {
    local src=$1 dst=$2 line key val rest p new out
    : >"$dst"
    while IFS= read -r line || [ -n "$line" ]; do
        if [[ $line =~ ^([[:space:]]*(filename|directory|filename_format)[[:space:]]*=[[:space:]]*)([^[:space:]\;#]+)(.*)$ ]]; then
            key=${BASH_REMATCH[2]}
            val=${BASH_REMATCH[3]}
            rest=${BASH_REMATCH[4]}
            out=
            IFS=: read -ra parts <<<"$val"
            # A `\:` (an escaped colon) is not a list: leave such a value whole.
            [[ $val == *'\:'* ]] && parts=("$val")
            for p in "${parts[@]}"; do
                if mappable "$p"; then
                    new=$MAP_DIR$p
                    if [ "$key" = directory ]; then
                        mkdir -p "$new"
                    else
                        mkdir -p "$(dirname "$new")"
                    fi
                    echo "$p"
                    p=$new
                fi
                out=${out:+$out:}$p
            done
            line=${BASH_REMATCH[1]}$out$rest
        fi
        printf '%s\n' "$line" >>"$dst"
    done <"$src"
}

# Run one world: prints "ok", "ok (stopped at N s)", or "no: REASON". The clock
# counts only the seconds outside `sluice run`'s lay-out of the files.
try() {
    local world=$1 file=$2 secs=$3 pid t=0 lay=0 stopped= killed= rc
    shift 3
    (cd "$WORK/cwd" && exec "$SLUICE" "$world" "$file" "$@" >"$WORK/out" 2>"$WORK/err") &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        t=$((t + 1))
        if [ -z "$stopped" ]; then
            if grep -q '^sluice: laying out' "$WORK/err" && ! grep -q '^sluice: laid out' "$WORK/err"; then
                lay=$((lay + 1))
                [ $lay -ge "$LAYOUT_SECS" ] && { kill -INT "$pid" 2>/dev/null || true; stopped=$t; }
            elif [ $((t - lay)) -ge "$secs" ]; then
                kill -INT "$pid" 2>/dev/null || true
                stopped=$t
            fi
        elif [ $((t - stopped)) -ge "$STOP_SECS" ]; then
            kill -KILL "$pid" 2>/dev/null || true
            killed=1
        fi
    done
    set +e
    wait "$pid"
    rc=$?
    set -e
    local laid=
    [ $lay -gt 0 ] && laid=", after ${lay} s laying out its files"
    if [ -n "$killed" ]; then
        echo "no: did not stop within ${STOP_SECS} s of the Ctrl-C at ${secs} s${laid} (killed)"
    elif [ $rc = 0 ]; then
        echo "ok"
    elif [ $rc = 130 ] && grep -q '^Jobs' "$WORK/out"; then
        echo "ok (stopped at ${secs} s${laid})"
    elif [ $rc = 130 ] && [ $lay -ge "$LAYOUT_SECS" ]; then
        echo "no: still laying out its files at ${LAYOUT_SECS} s"
    elif [ $rc = 130 ] && [ "$world" = sim ]; then
        echo "no: stopped at ${secs} s before it reported"
    elif [ $rc = 130 ]; then
        echo "no: stopped at ${secs} s before its I/O began"
    elif grep -q 'of new files on its file system but only' "$WORK/err"; then
        # sluice's free-space check: nothing scaled, nothing written.
        local need free
        need=$(grep -m1 -oE 'bytes \([0-9.]+ GiB\) of new files' "$WORK/err" | grep -oE '[0-9.]+ GiB')
        free=$(grep -m1 -oE 'only [0-9]+ bytes \([0-9.]+ GiB\)' "$WORK/err" | grep -oE '[0-9.]+ GiB')
        echo "not run: needs $need, $free free"
    elif grep -q 'sluice: error: ' "$WORK/err"; then
        echo "no: $(reason "$WORK/err")"
    else
        echo "no: exit status $rc: $(head -c 160 "$WORK/err" | tr '\n' ' ')"
    fi
}

# A row's result with a note added: "ok (NOTE)", "ok (stopped at 15 s; NOTE)".
annotate() {
    case $1 in
    *\)) echo "${1%)}; $2)" ;;
    *) echo "$1 ($2)" ;;
    esac
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
    zbd=
    if grep -qE '^\s*zonemode\s*=\s*zbd' "$f"; then
        dev=(--device zns)
        zbd=1
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
    sim=$(try sim "$f" "$SIM_SECS" "${dev[@]}" "${sec[@]}" --quiet)
    [ ${#dev[@]} -gt 0 ] && [[ $sim == ok* ]] && sim=$(annotate "$sim" "\`${dev[*]}\`")
    # Absolute paths and devices go into the test directory (a zoned example keeps its
    # device: it needs one).
    job=$f
    mapped=
    if [ -z "$zbd" ]; then
        job=$WORK/jobs/$name
        mapped=$(map_paths "$f" "$job" | sort -u | paste -sd, - | sed 's/,/, /g')
    fi
    note=
    if [ -n "$mapped" ]; then
        [[ $mapped == *,* ]] && note="paths" || note="path"
        note="$note $mapped mapped into the test directory"
        if ! grep -qE '^\s*(size|filesize|io_size|io_limit)\s*=' "$f"; then
            # A new file needs a size (fio's "you need to specify size="): 1 GiB.
            { printf '[global]\nsize=1g\n'; cat "$job"; } >"$job.sized" && mv "$job.sized" "$job"
            note="$note, a file of 1 GiB (size=1g: the job gives no size)"
        fi
    fi
    if [ -n "$fill" ] && [ -z "${FILL_DIR:-}" ]; then
        # fill_device writes until its file system is full: only on one made for it.
        run="not run: fill_device would fill RUN_DIR's file system; give FILL_DIR=a small file system to run it"
    elif [ -n "$fill" ]; then
        run=$(try run "$job" "$RUN_SECS" --directory "$FILL_DIR" "${sec[@]}")
        run=$(annotate "$run" "in FILL_DIR, $(df -h --output=size,fstype "$FILL_DIR" | tail -1 | awk '{print $1 " " $2}')")
    else
        run=$(try run "$job" "$RUN_SECS" --directory "$RUN_DIR" "${sec[@]}")
    fi
    # The mapping is worth a word unless the example stopped on its engine.
    if [ -n "$note" ] && [[ $run != "no: option 'ioengine'"* ]]; then
        run=$(annotate "$run" "$note")
    fi
    [[ $sim == ok* ]] && sim_ok=$((sim_ok + 1))
    [[ $run == ok* ]] && run_ok=$((run_ok + 1))
    echo "| \`$name\` | $sim | $run |"
done
echo
echo "fio examples: $total; run under sluice sim: $sim_ok; under sluice run: $run_ok"
