# Shared set-up of scripts/real-postgres.sh, real-sqlite.sh, real-fairness.sh (sourced).
#
# DIR (the scripts' argument) holds BACKING ($DIR/backing), the mount point
# ($DIR/mnt) and the results ($DIR/out). SLUICE: the sluice binary (default:
# target/release/sluice, built with `cargo build --release -p sluice` when missing).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { echo "$(basename "$0"): $*" >&2; exit 2; }

[ "$(id -u)" = 0 ] || die "run as root (the mount, ionice -c1 and the disk's scheduler need it)"
[ -e /dev/fuse ] || die "/dev/fuse is absent: load the fuse module (modprobe fuse)"

# apt_need PROGRAM PACKAGE...: install PACKAGE(s) when PROGRAM is missing.
APT_UPDATED=0
apt_need() {
    local prog=$1
    shift
    if [ -x "$prog" ] || command -v "$prog" >/dev/null 2>&1; then return 0; fi
    command -v apt-get >/dev/null || die "$prog is missing and there is no apt-get: install $*"
    if [ "$APT_UPDATED" = 0 ]; then apt-get update -qq; APT_UPDATED=1; fi
    echo "installing $* (for $prog)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
apt_need fusermount3 fuse3

if [ -z "${SLUICE:-}" ]; then
    SLUICE=${CARGO_TARGET_DIR:-$REPO/target}/release/sluice
    if [ ! -x "$SLUICE" ]; then
        (cd "$REPO" && cargo build --release -q -p sluice)
    fi
fi
[ -x "$SLUICE" ] || die "no sluice binary at $SLUICE (cargo build --release -p sluice)"

# setup_dirs DIR: B (BACKING), M (mount point), OUT (results).
setup_dirs() {
    mkdir -p "$1"
    DIR=$(cd "$1" && pwd)
    B=$DIR/backing M=$DIR/mnt OUT=$DIR/out
    if mountpoint -q "$M" 2>/dev/null; then
        die "$M is still mounted (an earlier run?): fusermount3 -u $M"
    fi
    mkdir -p "$B" "$M" "$OUT"
    chmod 755 "$DIR" "$B" "$M"
}

# mount_it POLICY TAG [sluice mount options...]: serve $B on $M, wait until mounted
# (polled, at most 20 s). Report: $OUT/mount-TAG.{json,txt,err}.
MOUNT_PID=
mount_it() {
    local policy=$1 tag=$2
    shift 2
    "$SLUICE" mount "$B" "$M" --policy "$policy" --json "$OUT/mount-$tag.json" "$@" \
        >"$OUT/mount-$tag.txt" 2>"$OUT/mount-$tag.err" &
    MOUNT_PID=$!
    local i
    for i in $(seq 400); do
        if mountpoint -q "$M"; then return 0; fi
        kill -0 "$MOUNT_PID" 2>/dev/null || { cat "$OUT/mount-$tag.err" >&2; die "sluice mount exited"; }
        sleep 0.05
    done
    die "the mount did not appear within 20 s"
}
unmount_it() {
    [ -n "$MOUNT_PID" ] || return 0
    local i
    for i in $(seq 100); do
        fusermount3 -u "$M" 2>/dev/null && break
        sleep 0.1
    done
    mountpoint -q "$M" && fusermount3 -uz "$M"
    wait "$MOUNT_PID" || true
    MOUNT_PID=
}
cleanup_mount() {
    if [ -n "${M:-}" ] && mountpoint -q "$M" 2>/dev/null; then
        fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" || true
    fi
    if [ -n "$MOUNT_PID" ]; then wait "$MOUNT_PID" 2>/dev/null || true; fi
}

# The machine's state, for the record (load, disk, the disk's scheduler).
machine_state() {
    local dev disk
    dev=$(df --output=source "$DIR" | tail -1)
    disk=$(basename "$(readlink -f "$dev")")
    [ -e "/sys/block/$disk" ] || disk=$(lsblk -no pkname "$dev" 2>/dev/null | head -1)
    echo "date: $(date -u '+%F %T UTC'); $(nproc) CPUs; kernel $(uname -r)"
    echo "uptime:$(uptime | sed 's/.*up/ up/')"
    echo "disk: $DIR on $dev ($(df --output=fstype "$DIR" | tail -1 | tr -d ' ')), /sys/block/$disk/queue/scheduler: $(cat /sys/block/"$disk"/queue/scheduler 2>/dev/null || echo '?')"
    echo "sluice: $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?')"
}
