#!/usr/bin/env bash
# Byte-for-byte check that two sluice binaries simulate the same: every job file under
# jobs/, jobs/real/ and experiments/ (`sluice sim FILE --json`, its table too), the
# bare `sluice sim`, and `sluice repro` (all suites, seed 1). For refactors that must
# not move a simulated figure.
#
#   scripts/sim-identical.sh OLD_BINARY NEW_BINARY
#
# e.g. build the old commit into another target directory:
#   git worktree add /tmp/old <commit> && (cd /tmp/old && cargo build --release)
#   scripts/sim-identical.sh /tmp/old/target/release/sluice target/release/sluice
# Prints each file that differs and exits 1 if any does.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
OLD=$(realpath "$1"); NEW=$(realpath "$2")
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() { # BIN DIR
    mkdir -p "$2"
    for f in jobs/*.fio jobs/real/*.fio experiments/*/*.fio; do
        n=$(echo "$f" | tr / _)
        "$1" sim "$f" -q --json "$2/$n.json" > "$2/$n.txt" 2> "$2/$n.err" || echo "exit $?" >> "$2/$n.err"
    done
    "$1" sim -q --json "$2/default.json" > "$2/default.txt" 2>&1
    "$1" repro -q > "$2/repro.txt" 2>&1 || true
}
echo "== old: $OLD"; run "$OLD" "$OUT/old"
echo "== new: $NEW"; run "$NEW" "$OUT/new"
diffs=0
for f in "$OUT"/old/*; do
    if ! cmp -s "$f" "$OUT/new/$(basename "$f")"; then
        echo "differs: $(basename "$f")"; diffs=$((diffs + 1))
    fi
done
echo "$(ls "$OUT/old" | wc -l) files compared, $diffs differ"
[ "$diffs" -eq 0 ]
