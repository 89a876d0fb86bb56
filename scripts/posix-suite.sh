#!/usr/bin/env bash
# Run the pjdfstest POSIX conformance suite on a sluice mount and on the backing
# file system directly, and print the failures per test file and in total.
#
#   scripts/posix-suite.sh PJDFSTEST_DIR [BACKING_DIR]
#
# PJDFSTEST_DIR: a pjdfstest checkout you provide (built here if its `pjdfstest`
# binary is missing: autoreconf -ifs && ./configure && make pjdfstest).
# BACKING_DIR: an existing directory on the file system to put under the mount
# (default: a new temporary directory). Needs root (the suite chowns and
# switches uids). Environment: SLUICE (binary, default target/release/sluice),
# SLUICE_ARGS (extra `sluice mount` arguments, e.g. "--cache 0"),
# ONLY=mount|backing (run one side only), TESTS (a subdirectory of tests/,
# e.g. "rename", default all).
set -euo pipefail

die() { echo "posix-suite: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: $0 PJDFSTEST_DIR [BACKING_DIR]"
PJD=$(cd "$1" 2>/dev/null && pwd) || die "no such directory: $1 (give a pjdfstest checkout)"
[ -d "$PJD/tests" ] || die "$PJD has no tests/ directory: is it a pjdfstest checkout?"
[ "$(id -u)" = 0 ] || die "must run as root (the suite changes owners and uids)"
command -v prove >/dev/null || die "prove not found: apt-get install perl (Test::Harness)"
SLUICE=${SLUICE:-$(dirname "$0")/../target/release/sluice}
[ -x "$SLUICE" ] || die "no sluice binary at $SLUICE: cargo build --release -p sluice, or set SLUICE"
TESTS=${TESTS:-}
[ -z "$TESTS" ] || [ -d "$PJD/tests/$TESTS" ] || die "no test directory $PJD/tests/$TESTS"

if [ ! -x "$PJD/pjdfstest" ]; then
    echo "posix-suite: building pjdfstest in $PJD" >&2
    (cd "$PJD" && { [ -x configure ] || autoreconf -ifs; } && { [ -f Makefile ] || ./configure; } && make pjdfstest) >&2 \
        || die "building pjdfstest failed (needs autoconf automake gcc make)"
fi

SCRATCH=$(mktemp -d /tmp/posix-suite.XXXXXX)
BACKING=${2:-$SCRATCH/backing}
mkdir -p "$BACKING" || die "cannot create $BACKING"
MNT=$SCRATCH/mnt
DIRECT=$BACKING/direct-run
mkdir -p "$MNT"
PID=
cleanup() {
    cd /
    if [ -n "$PID" ]; then
        fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$DIRECT" "$BACKING/run" 2>/dev/null || true
    rm -rf "$SCRATCH" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# run_suite LABEL DIR: prove the suite from inside DIR; print failed assertions per file.
run_suite() {
    local label=$1 dir=$2 log=$SCRATCH/${1%% *}.log
    (cd "$dir" && prove -r "$PJD/tests/$TESTS" >"$log" 2>&1) || true
    echo "== $label ($dir)"
    [ -z "${KEEP_LOG:-}" ] || cp "$log" "$KEEP_LOG.${1%% *}"
    # Test::Harness summary lines: "/path/x.t (Wstat: ... Tests: N Failed: F)"
    awk -v root="$PJD/tests/" '
        /\(Wstat: .*Tests: [0-9]+ Failed: [0-9]+\)/ {
            f=$1; sub(root, "", f); n=$0; sub(/.*Failed: /, "", n); sub(/\).*/, "", n);
            w=$0; sub(/.*Wstat: /, "", w); sub(/ .*/, "", w);
            if (n > 0) printf "  %-28s %s failed\n", f, n; total+=n
            if (n == 0 && w != 0) { printf "  %-28s did not finish (wstat %s)\n", f, w; broken++ } }
        END { printf "  failed assertions: %d\n", total
              if (broken) printf "  test files that did not finish: %d\n", broken }' "$log"
    grep -E '^(Files=|Result:)' "$log" | sed 's/^/  /'
}

if [ "${ONLY:-}" != backing ]; then
    # shellcheck disable=SC2086
    "$SLUICE" mount "$BACKING" "$MNT" --foreground ${SLUICE_ARGS:-} >"$SCRATCH/mount.log" 2>&1 &
    PID=$!
    for _ in $(seq 100); do
        mountpoint -q "$MNT" && break
        kill -0 "$PID" 2>/dev/null || { cat "$SCRATCH/mount.log" >&2; die "sluice mount exited"; }
        sleep 0.1
    done
    mountpoint -q "$MNT" || die "the mount did not appear at $MNT"
    mkdir "$MNT/run"
    run_suite "sluice-mount${SLUICE_ARGS:+ $SLUICE_ARGS}" "$MNT/run"
    if ! mountpoint -q "$MNT" || ! kill -0 "$PID" 2>/dev/null; then
        echo "  the mount was gone at the end of the run; its log:" >&2
        sed 's/^/    /' "$SCRATCH/mount.log" >&2
    fi
fi
if [ "${ONLY:-}" != mount ]; then
    mkdir -p "$DIRECT"
    run_suite "backing-fs" "$DIRECT"
fi
