# Shared set-up of the scripts/real-*.sh experiments (sourced, not run).
#
# Every job file of jobs/real/ works on one shared 1 GiB file, `sluice-real.1g`, in
# DATA_DIR (default: target/real-data under the repository; it must be on a file
# system with O_DIRECT, not tmpfs). The first run lays it out (sluice writes it in
# full); later runs reuse it (--keep-files --allow-write-existing). KEEP_DATA=0
# removes it at the end.
#
# SLUICE: the sluice binary (default: built with `cargo build --release`).
# ROUNDS, RUNTIME: rounds (medians are taken over them) and seconds per run; each
# script has its own defaults.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD
DATA_DIR=${DATA_DIR:-$REPO/target/real-data}
KEEP_DATA=${KEEP_DATA:-1}
mkdir -p "$DATA_DIR"
DATA_DIR=$(cd "$DATA_DIR" && pwd)
if [ -z "${SLUICE:-}" ]; then
    cargo build --release --quiet
    SLUICE=${CARGO_TARGET_DIR:-target}/release/sluice
fi
WORK=$(mktemp -d)
cleanup() {
    rm -rf "$WORK"
    if [ "$KEEP_DATA" = 0 ]; then rm -f "$DATA_DIR/sluice-real.1g"; fi
}
trap cleanup EXIT

# real_job SRC DST [iodepth]: copy a job file, setting runtime=RUNTIME (and iodepth).
real_job() {
    local sed_args=(-e "s/^runtime=.*/runtime=${RUNTIME}s/")
    if [ $# -ge 3 ]; then sed_args+=(-e "s/^iodepth=.*/iodepth=$3/"); fi
    sed "${sed_args[@]}" "$1" >"$2"
}

# real_run JOB JSON POLICIES [extra sluice options...]: one `sluice run` on DATA_DIR.
real_run() {
    local job=$1 json=$2 policies=$3
    shift 3
    "$SLUICE" run "$job" -D "$DATA_DIR" --keep-files --allow-write-existing -q \
        --policy "$policies" --json "$json" "$@" >/dev/null
}

# The machine, for the record.
real_machine() {
    echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), kernel $(uname -r)"
    local dev
    dev=$(df --output=source "$DATA_DIR" | tail -1)
    echo "data: $DATA_DIR on $dev ($(df --output=fstype "$DATA_DIR" | tail -1 | tr -d ' ')), $(basename "$dev") tags: $(cat /sys/block/"$(basename "$dev")"/mq/*/nr_tags 2>/dev/null | head -1)"
}
